"""Remote execution: Hands attached over HandLink, and the persisted state machine of their tasks.

Read first: `execution.py` (how the pieces are wired), `registry.py` (the one-terminal rule),
`taskservice.py` (reconciliation), then `proto/tobe/v1/hand.proto` (the protocol).
Domain modules never import grpc; `servicer.py` is the only boundary. It applies one stream's
reports in order within a task and concurrently across tasks, pings a Hand silent for half the
heartbeat timeout and cuts one silent for all of it UNAVAILABLE.

A result's images (a Hand's `TaskResult.images`) are checked by `Authority.result` like a
person's (`mind.conversation.images.check_images`): images on a failed result, or breaking the
limits, are acked INVALID before the Registry is asked, so the task is unchanged and the Hand
resends without them. `Registry.finish` stores them in `media` and their refs on the task in
the result's unit; a sealed task refuses them, since images would outlive a sealed turn.
"""
