"""Runtime helpers shared by every ToBe process: gRPC bootstrap, channels, logging, locks."""
