"""Remote execution: Hands attached over HandLink, and the persisted state machine of their tasks.

Read first: `execution.py` (how the pieces are wired), `registry.py` (the one-terminal rule),
`taskservice.py` (reconciliation and snapshots), then `proto/tobe/v1/hand.proto` (the protocol).
Domain modules never import grpc; `servicer.py` is the only boundary.
"""
