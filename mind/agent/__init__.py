"""The top of the Mind below the servicers: conversation actors, the run flows, and the
Mind's API facade.

`mind.conversation` below it holds what everyone reads (inputs, runs, messages, queries,
typed input sources); nothing there imports this package.
"""
