"""Tools and the one lifecycle every tool call takes (admission → authorization → execution →
terminal)."""
