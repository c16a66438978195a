"""Generated contracts of package tobe.v1. Do not edit: run scripts/gen_proto.py."""
