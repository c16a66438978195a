"""`tobe chat`: the terminal client of Face.

`repl.py` reads input and slash commands, `conversations.py` picks which conversation opens
(`/new`, `/list`, `/switch`), `render.py` turns events into lines, `live.py` keeps the transient
region of streamed text and running tools, `transcript.py` says how messages and tool calls
look, live and in history. What streams is provisional: a step's text is printed once, from its
durable message, after the live region is erased.
"""
