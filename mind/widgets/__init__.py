"""Widgets: typed, structured objects the model builds in a conversation (an itinerary, a
shopping list) and sends into it, each shown by its type's page.

The operator registers widget types (`types.py`, rules in `type_rules.py`): a schema document of
modules, each with a sentence for the model and a JSON Schema for one record, and one HTML page.
A `put` of an existing type makes a new version; a type in use keeps its modules unless forced.
"""
