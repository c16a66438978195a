// Following the transcript the way chat apps do: while the view is at the bottom it stays
// there as messages arrive and replies stream in; once the person has scrolled up it stays where
// they are, and a "new messages" button appears when something arrives (clicking it goes to the
// bottom). What waits for the person (an approval, a question) is always brought into view.

const NEAR_END_PX = 80;

export class Follower {
  constructor(scroller, button) {
    this.scroller = scroller;
    this.button = button;
    this.following = true;
    scroller.addEventListener(
      "scroll",
      () => {
        this.following = this.atEnd();
        if (this.following) this.button.hidden = true;
      },
      { passive: true },
    );
    button.addEventListener("click", () => this.toEnd());
    // Streamed text is drawn once a frame, after the event that carried it: watching the
    // transcript itself follows every change, whoever made it.
    new MutationObserver(() => this.changed()).observe(scroller, { childList: true, subtree: true, characterData: true });
  }

  atEnd() {
    const { scrollHeight, scrollTop, clientHeight } = this.scroller;
    return scrollHeight - scrollTop - clientHeight < NEAR_END_PX;
  }

  changed() {
    if (this.following) this.scroller.scrollTop = this.scroller.scrollHeight;
    else if (!this.atEnd()) this.button.hidden = false;
  }

  /** Go to the bottom and follow from there. */
  toEnd() {
    this.following = true;
    this.button.hidden = true;
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /** Bring `node` into view wherever the person had scrolled (it waits for them, or they
   * asked for it: `block` "center"); following stops unless that is the bottom. */
  reveal(node, block = "nearest") {
    node.scrollIntoView({ block });
    this.following = this.atEnd();
  }
}
