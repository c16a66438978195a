"""The Matrix channel's network side: the agent as a Matrix bot user (`MatrixTransport`)."""

from face.channels.matrix.transport import MatrixTransport

__all__ = ["MatrixTransport"]
