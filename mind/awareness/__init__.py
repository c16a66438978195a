"""The Mind's side of Awareness: the three stable tools and the observation router."""
