"""The Awareness engine: adapter lifecycle, actions, and the path from `emit` to publish.

Lifecycle of one adapter instance (`register`, by `<name>` or `<name>@<label>`):
1. refuse an instance registered already (two registrations would share its `data/`);
2. resolve the adapter's plain directory name under the adapters roots;
3. prepare its instance directory under the data directory (`awareness.instances`), create
   `config.json` there from the default if missing, validate it against the schema;
4. import the entry module afresh and instantiate `ADAPTER` with a new runtime `adapter_id`
   (`<instance>-<12 hex digits>`);
5. when its `auto_start` is true, hand it to its supervisor (`awareness.supervisor`), which
   starts it, restarts it with backoff when it fails, and keeps its state for `list_adapters`.

A failure in any step of one adapter (an unwritable instance directory included) is an
AdapterLoadError: at start it is logged and that adapter skipped, the others still serve. At
start every adapter under the roots is registered as its default instance, and every labelled
instance configured under the data directory as well.

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
from awareness.errors import (
    ActionError,
    AdapterLoadError,
    AlreadyRegistered,
    AwarenessError,
    UnknownAdapter,
)
from awareness.journal import Journal
from awareness.media import MediaStore
from awareness.model import Actor, Observation, PublishedBatch, Trust, permissions_for
from awareness.push import Publisher
from awareness.registry import RegisteredAdapter
from awareness.scrub import Scrubber
from awareness.sensitive import check_schema, masked
from awareness.supervisor import Supervisor, Timeouts
from tobe import telemetry
from tobe.telemetry import instruments

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
        timeouts: Timeouts,
    ) -> None:
        self.roots = list(roots)
        self.scrubber = scrubber
        self.media = MediaStore(data_dir / "media")
        self.instances_root = data_dir / "adapters"
        self.journal = Journal(data_dir / "journal.db")
        self.publisher = Publisher(self.journal, low_window=low_window, medium_window=medium_window)
        self._timeouts = timeouts
        self._adapters: dict[str, RegisteredAdapter] = {}
        self._supervisors: dict[str, Supervisor] = {}
        self._lifecycle = asyncio.Lock()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Publish what the last run left held, then register every adapter under the roots.

        A broken adapter is logged and skipped.
        """
        self.publisher.publish_left_over()
        names = loader.scan(self.roots)
        extra = [
            n for n in instances.labelled(self.instances_root) if loader.adapter_of(n) in names
        ]
        for name in names + extra:
            try:
                await self.register(name)
            except AwarenessError as exc:
                log.error("adapter %s not registered: %s", name, exc)

    async def register(self, name: str) -> RegisteredAdapter:
        async with self._lifecycle:
            adapter_name = loader.adapter_of(name)
            for other in self._adapters.values():
                if other.instance_name == name:
                    raise AlreadyRegistered(
                        f"adapter {name} is registered already as {other.adapter_id}; "
                        "unregister it first to load it again"
                    )
            directory = loader.find_adapter_dir(adapter_name, self.roots)
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
                supervisor = Supervisor(record, self.scrubber, self._timeouts)
            except Exception:
                self.scrubber.forget(adapter_id)
                loader.forget_module(cls)
                raise
            self._adapters[adapter_id] = record
            self._supervisors[adapter_id] = supervisor
            log.info("registered adapter %s as %s", name, adapter_id)
            if record.auto_start:
                await supervisor.start()
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
        instance_name: str,
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
            self._report_failure(adapter_id, error)

        context = AdapterContext(
            adapter_id=adapter_id,
            adapter_name=directory.name,
            instance_name=instance_name,
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
                self.scrubber.scrub(f"adapter {instance_name} failed to initialise: {exc}")
            ) from None
        record = RegisteredAdapter(
            adapter_id=adapter_id,
            name=directory.name,
            instance_name=instance_name,
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

    async def _stop(self, record: RegisteredAdapter) -> None:
        await self._supervisors[record.adapter_id].stop()
        self.publisher.flush_adapter(record.adapter_id)

    async def unregister(self, adapter_id: str) -> RegisteredAdapter:
        async with self._lifecycle:
            record = self._get(adapter_id)
            await self._stop(record)
            record.accepting = False
            del self._adapters[adapter_id]
            del self._supervisors[adapter_id]
            self.scrubber.forget(adapter_id)
            loader.forget_module(record.cls)
            log.info("unregistered adapter %s", adapter_id)
            return record

    async def stop(self) -> None:
        """Shutdown: close the push first, then stop every adapter (flushes are journalled)."""
        self.publisher.close()
        async with self._lifecycle:
            records = list(self._adapters.values())
            # Together: each stop is bounded by stop_timeout, and they are independent.
            await asyncio.gather(*(self._stop(record) for record in records))
            for record in records:
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
            instance=record.instance_name,
            source_key=source_key,
            source_title=source_title,
        )
        attributes: dict[str, telemetry.AttributeValue] = {
            "tobe.adapter": record.name,
            "tobe.instance": record.instance_name,
            "tobe.trust": trust.value,
            "tobe.observation.id": observation.id,
        }
        instruments.awareness_observations.add(1, {"adapter": record.name, "trust": trust.value})
        with telemetry.span(f"observe {record.name}", kind="producer", attributes=attributes):
            trace = telemetry.carrier()
            if threading.get_ident() == self._loop_thread:
                self.publisher.accept(observation, trace)
            else:
                future = asyncio.run_coroutine_threadsafe(
                    self._accept(observation, trace), self._loop
                )
                future.result()
        return observation.id

    def _report_failure(self, adapter_id: str, error: BaseException | str) -> None:
        supervisor = self._supervisors.get(adapter_id)
        if supervisor is None:
            log.warning("adapter %s reported a failure after it was unregistered", adapter_id)
            return
        supervisor.report(error)

    async def _accept(self, observation: Observation, trace: dict[str, str]) -> None:
        self.publisher.accept(observation, trace)


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
