"""The Awareness engine: adapter lifecycle, actions, and the path from `emit` to publish.

Lifecycle of one adapter (`register`):
1. resolve the plain directory name under the adapters roots;
2. prepare its instance directory under the data directory (`awareness.instances`), create
   `config.json` there from the default if missing, validate it against the schema;
3. import the entry module afresh and instantiate `ADAPTER` with a new runtime `adapter_id`;
4. start it when its `auto_start` is true (a failing start leaves it registered, not running).

A failure in any step of one adapter (an unwritable instance directory included) is an
AdapterLoadError: at start it is logged and that adapter skipped, the others still serve.

`emit` returns once the observation is committed to the journal (`Publisher.accept`); `start`
first publishes what a crashed run held for aggregation. `unregister` stops the adapter,
publishes its held observations and removes it. `stop` (process shutdown) closes the push
first, then stops every adapter, so shutdown never wakes the agent.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema

from awareness import instances, loader
from awareness.adapter import Action, ActionFailed, Adapter, AdapterContext, MediaInput
from awareness.config_files import describe_error, load_config, sensitive_values
from awareness.errors import ActionError, AdapterLoadError, AwarenessError, UnknownAdapter
from awareness.journal import Journal
from awareness.media import MediaStore
from awareness.model import Actor, Observation, PublishedBatch, Trust, permissions_for
from awareness.push import Publisher
from awareness.registry import RegisteredAdapter
from awareness.scrub import Scrubber
from awareness.sensitive import check_schema, masked

log = logging.getLogger(__name__)


class Engine:
    def __init__(
        self,
        *,
        roots: Sequence[Path],
        data_dir: Path,
        low_window: float,
        medium_window: float,
        scrubber: Scrubber,
    ) -> None:
        self.roots = list(roots)
        self.scrubber = scrubber
        self.media = MediaStore(data_dir / "media")
        self.instances_root = data_dir / "adapters"
        self.journal = Journal(data_dir / "journal.db")
        self.publisher = Publisher(self.journal, low_window=low_window, medium_window=medium_window)
        self._adapters: dict[str, RegisteredAdapter] = {}
        self._lifecycle = asyncio.Lock()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Publish what the last run left held, then register every adapter under the roots.

        A broken adapter is logged and skipped.
        """
        self.publisher.publish_left_over()
        for name in loader.scan(self.roots):
            try:
                await self.register(name)
            except AwarenessError as exc:
                log.error("adapter %s not registered: %s", name, exc)

    async def register(self, name: str) -> RegisteredAdapter:
        async with self._lifecycle:
            directory = loader.find_adapter_dir(name, self.roots)
            instance_dir, config, schema = self._instance(name, directory)
            adapter_id = f"{name}-{uuid.uuid4().hex[:12]}"
            self.scrubber.register(adapter_id, sensitive_values(config, schema))
            try:
                cls = loader.import_adapter_class(directory)
            except AwarenessError as exc:
                message = self.scrubber.scrub(str(exc))
                self.scrubber.forget(adapter_id)
                raise type(exc)(message) from None
            try:
                record = self._instantiate(
                    adapter_id, name, directory, instance_dir, cls, config, schema
                )
            except Exception:
                self.scrubber.forget(adapter_id)
                loader.forget_module(cls)
                raise
            self._adapters[adapter_id] = record
            log.info("registered adapter %s as %s", name, adapter_id)
            if record.auto_start:
                await self._start(record)
            return record

    def _instance(self, name: str, directory: Path) -> tuple[Path, dict[str, Any], dict[str, Any]]:
        """The adapter's instance directory, config and schema; OSError becomes a load error."""
        try:
            instance_dir = instances.prepare(name, directory, self.instances_root)
            config, schema = load_config(directory, instance_dir)
        except OSError as exc:
            raise AdapterLoadError(
                f"cannot set up the config and data of adapter {name} under "
                f"{self.instances_root / name}: {exc}"
            ) from None
        return instance_dir, config, schema

    def _instantiate(
        self,
        adapter_id: str,
        name: str,
        directory: Path,
        instance_dir: Path,
        cls: type[Adapter],
        config: dict[str, Any],
        schema: dict[str, Any],
    ) -> RegisteredAdapter:
        record_box: list[RegisteredAdapter] = []

        def emitter(**kwargs: Any) -> str:
            return self._emit(record_box[0], **kwargs)

        def failure_reporter(error: BaseException | str) -> None:
            self._report_failure(record_box[0], error)

        context = AdapterContext(
            adapter_id=adapter_id,
            adapter_name=name,
            directory=directory,
            instance_dir=instance_dir,
            config=config,
            emitter=emitter,
            failure_reporter=failure_reporter,
        )
        try:
            instance = cls(context)
            read_actions = _by_name(instance.read_actions())
            write_actions = _by_name(instance.write_actions())
            check_schema(instance.content_schema, "content_schema")
        except Exception as exc:
            raise AdapterLoadError(
                self.scrubber.scrub(f"adapter {name} failed to initialise: {exc}")
            ) from None
        record = RegisteredAdapter(
            adapter_id=adapter_id,
            name=name,
            directory=directory,
            cls=cls,
            instance=instance,
            config=config,
            schema=schema,
            auto_start=bool(config.get("auto_start", cls.auto_start)),
            conversation_key=str(config.get("conversation", "") or ""),
            read_actions=read_actions,
            write_actions=write_actions,
        )
        record_box.append(record)
        return record

    async def _start(self, record: RegisteredAdapter) -> None:
        try:
            await record.instance.start()
        except Exception as exc:
            record.last_error = self.scrubber.scrub(f"start failed: {type(exc).__name__}: {exc}")
            log.error("adapter %s: %s", record.adapter_id, record.last_error)
            return
        record.running, record.last_error = True, ""
        log.info("started adapter %s", record.adapter_id)

    async def _stop(self, record: RegisteredAdapter) -> None:
        if record.running:
            try:
                await record.instance.stop()
            except Exception as exc:
                record.last_error = self.scrubber.scrub(f"stop failed: {type(exc).__name__}: {exc}")
                log.error("adapter %s: %s", record.adapter_id, record.last_error)
            record.running = False
        self.publisher.flush_adapter(record.adapter_id)

    async def unregister(self, adapter_id: str) -> RegisteredAdapter:
        async with self._lifecycle:
            record = self._get(adapter_id)
            await self._stop(record)
            record.accepting = False
            del self._adapters[adapter_id]
            self.scrubber.forget(adapter_id)
            loader.forget_module(record.cls)
            log.info("unregistered adapter %s", adapter_id)
            return record

    async def stop(self) -> None:
        """Shutdown: close the push first, then stop every adapter (flushes are journalled)."""
        self.publisher.close()
        async with self._lifecycle:
            for record in list(self._adapters.values()):
                await self._stop(record)
                record.accepting = False
        self.journal.close()

    # -- queries and actions ---------------------------------------------------------------

    def adapters(self) -> list[RegisteredAdapter]:
        return list(self._adapters.values())

    def _get(self, adapter_id: str) -> RegisteredAdapter:
        record = self._adapters.get(adapter_id)
        if record is None:
            known = ", ".join(self._adapters) or "none"
            raise UnknownAdapter(f"no adapter with id {adapter_id!r} (registered: {known})")
        return record

    def drain(self, limit: int) -> list[PublishedBatch]:
        return self.journal.drain(limit)

    async def call(self, adapter_id: str, action: str, args: dict[str, Any], *, write: bool) -> Any:
        """Run an adapter action; failures become ActionError with a scrubbed message."""
        record = self._get(adapter_id)
        actions = record.write_actions if write else record.read_actions
        spec = actions.get(action)
        if spec is None:
            kind = "write" if write else "read"
            names = ", ".join(actions) or "none"
            raise ActionError(f"{record.name} has no {kind} action {action!r} ({kind}: {names})")
        _validate_args(spec, args)
        if write:
            args = self.media.resolve_args(args)
        try:
            result = await spec.handler(args)
        except ActionFailed as exc:
            raise ActionError(self.scrubber.scrub(str(exc))) from None
        except AwarenessError as exc:
            raise ActionError(self.scrubber.scrub(str(exc))) from None
        except Exception as exc:
            log.exception("adapter %s action %s failed", adapter_id, action)
            message = f"{record.name}.{action} failed: {type(exc).__name__}: {exc}"
            raise ActionError(self.scrubber.scrub(message)) from None
        return masked(result, spec.result_schema, self.scrubber.scrub)

    async def subscribe(self, after_seq: int) -> AsyncIterator[PublishedBatch]:
        async for batch in self.publisher.subscribe(after_seq):
            yield batch

    # -- emit ------------------------------------------------------------------------------

    def _emit(
        self,
        record: RegisteredAdapter,
        *,
        actor: Actor,
        trust: Trust,
        content: dict[str, Any],
        media: Sequence[MediaInput],
        conversation_key: str | None,
        source_key: str,
        source_title: str,
    ) -> str:
        if not record.accepting:
            raise AwarenessError(f"adapter {record.adapter_id} is no longer registered")
        refs = tuple(self.media.ingest(item) for item in media) if trust is not Trust.OFF else ()
        if conversation_key is None:
            conversation_key = record.conversation_key
        observation = Observation(
            id=uuid.uuid4().hex,
            adapter_id=record.adapter_id,
            adapter_name=record.name,
            actor=actor,
            trust=trust,
            timestamp=datetime.now(UTC),
            content=masked(content, record.instance.content_schema, self.scrubber.scrub),
            media=refs,
            permissions=permissions_for(trust),
            conversation_key=conversation_key,
            instance=record.name,
            source_key=source_key,
            source_title=source_title,
        )
        if threading.get_ident() == self._loop_thread:
            self.publisher.accept(observation)
        else:
            future = asyncio.run_coroutine_threadsafe(self._accept(observation), self._loop)
            future.result()
        return observation.id

    def _report_failure(self, record: RegisteredAdapter, error: BaseException | str) -> None:
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        record.last_error = self.scrubber.scrub(text)
        log.error("adapter %s failed: %s", record.adapter_id, record.last_error)

    async def _accept(self, observation: Observation) -> None:
        self.publisher.accept(observation)


def _by_name(actions: Sequence[Action]) -> dict[str, Action]:
    result: dict[str, Action] = {}
    for action in actions:
        if action.name in result:
            raise ValueError(f"duplicate action name {action.name!r}")
        jsonschema.Draft202012Validator.check_schema(action.args_schema)
        check_schema(action.result_schema, f"result_schema of action {action.name!r}")
        result[action.name] = action
    return result


def _validate_args(action: Action, args: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(action.args_schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    if error is not None:
        raise ActionError(f"invalid args for {action.name}: {describe_error(error)}")
