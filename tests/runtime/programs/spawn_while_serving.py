"""Serves and calls gRPC in one thread while another starts terminal programs; prints how many
of them never ran. Imports ToBe first, as every `tobe` process does."""
# ruff: noqa: I001  (the import order is what is tested)

import asyncio
import sys
import threading

import tobe  # noqa: F401

import grpc
import pexpect
from grpc_health.v1 import health, health_pb2, health_pb2_grpc


async def serve_and_call(stop: threading.Event, ready: threading.Event) -> None:
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        await stub.Check(health_pb2.HealthCheckRequest())
        ready.set()
        while not stop.is_set():
            await stub.Check(health_pb2.HealthCheckRequest())
    await server.stop(None)


def main(spawns: int) -> None:
    stop, ready = threading.Event(), threading.Event()
    caller = threading.Thread(target=lambda: asyncio.run(serve_and_call(stop, ready)))
    caller.start()
    ready.wait(30)
    failed = 0
    try:
        for number in range(spawns):
            child = pexpect.spawn(sys.executable, ["-c", "print('started')"], timeout=60)
            # A child that never says it started (died before exec, or hangs) is a failure.
            outcome = child.expect([b"started", pexpect.EOF, pexpect.TIMEOUT])
            if outcome:
                failed += 1
                print(
                    f"spawn {number}: {'no output' if outcome == 1 else 'timed out'}",
                    file=sys.stderr,
                )
            child.close(force=True)
    finally:
        # Whatever happened, the serving thread ends, so this program always exits.
        stop.set()
        caller.join()
    print(f"failed {failed}")


main(int(sys.argv[1]))
