"""The Scripted provider's script of the gateway tests: a turn with thinking, streamed text and
a `current_time` tool call (`time…`), and a two-chunk echo for anything else."""

SCRIPT = """
runs:
  - match: "^time"
    steps:
      - thinking: "I should look at the clock."
        text: "Let me check."
        chunks: 3
        tool_calls:
          - name: current_time
            arguments: {timezone: "UTC"}
      - text: "Done: here is the time."
  - match: ".*"
    steps:
      - {text: "echo reply", chunks: 2}
"""
