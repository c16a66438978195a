"""Channels: the agent reached on networks people already use (Matrix, email).

A channel is a client of the Face like `tobe chat`: each paired person talks through a Face
connection of their own credential, so scopes, revocation and what they may see are those of
any client. The channels process (`tobe channels serve`) runs every enabled channel.
"""
