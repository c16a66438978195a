"""gRPC servicers of the Mind: proto ↔ domain conversion and error mapping only."""
