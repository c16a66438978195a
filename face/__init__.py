"""Face: the client gateway (per-connection queues, sequence numbers, replay) and `tobe chat`."""
