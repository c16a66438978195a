"""`tobe hand check`: a conformance check for Hand authors.

It plays a scripted Mind (`link`), drives the scenarios of hand.proto (`scenarios`, using the
moves in `session`) against the Hand's conformance tools, and prints a pass/fail table
(`report`); `runner` ties them together.
"""
