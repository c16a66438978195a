"""The Mind's side of Awareness: the three stable tools and the observation router.

Awareness commits each observation to its journal before the adapter's `emit` returns and
publishes it by trust (HIGH and MAX at once, LOW and MEDIUM in windows, OFF never). The router
(`router.py`) consumes them exactly once from its stored cursor and hands one note per target
conversation to the sink (`sink.py`), which fetches what Awareness typed as images
(`images.py`) and delivers the note (data, never instructions) as a steer (HIGH, MAX) or a
follow-up (LOW, MEDIUM). The run an observation starts carries its trust into the approval
policy and its origin into approval requests (`mind.conversation.origins`). The tools
(`tools.py`) judge each adapter action by what the adapter declares (`catalog.py`), as
`<instance>.<action>`.
"""
