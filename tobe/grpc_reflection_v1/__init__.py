"""Generated contracts of package grpc.reflection.v1. Do not edit: run scripts/gen_proto.py."""
