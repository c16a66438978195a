"""Adapter config and data live under the Awareness data directory, never beside the code."""

from __future__ import annotations

import json

from awareness_harness import PROBE, AwarenessProcess, Client, add_adapter


async def test_config_and_data_left_beside_adapter_code_are_carried_into_the_data_directory(
    awareness_dirs: AwarenessProcess,
):
    legacy = add_adapter(awareness_dirs.adapters_dir, PROBE, "legacy")
    default = json.loads((legacy / "config.default.json").read_text())
    (legacy / "config.json").write_text(json.dumps({**default, "greeting": "kept"}))
    (legacy / "data" / "notes").mkdir(parents=True)
    (legacy / "data" / "notes" / "a.txt").write_text("written by an older version")

    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    adapter_id = await client.adapter_id("legacy")
    assert (await client.observe(adapter_id, "settings"))["result"] == {"greeting": "kept"}
    written = await client.interact(adapter_id, "write_data", path="notes/b.txt")
    await client.close()

    instance = awareness_dirs.instance_dir("legacy")
    assert json.loads((instance / "config.json").read_text())["greeting"] == "kept"
    notes = instance / "data" / "notes"
    assert (notes / "a.txt").read_text() == "written by an older version"
    assert written["result"]["written"] == str(notes / "b.txt")
    assert not (legacy / "data" / "notes" / "b.txt").exists()
    logs = awareness_dirs.stderr()
    assert "adapter legacy: copied its config.json from" in logs
    assert "adapter legacy: copied its data/ from" in logs
    # The copy, not the original, is what counts from now on.
    (legacy / "config.json").write_text(json.dumps({**default, "greeting": "stale"}))
    awareness_dirs.stop()
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    adapter_id = await client.adapter_id("legacy")
    assert (await client.observe(adapter_id, "settings"))["result"] == {"greeting": "kept"}
    await client.close()


async def test_an_adapter_whose_instance_directory_cannot_be_made_is_skipped_and_others_serve(
    awareness_dirs: AwarenessProcess,
):
    add_adapter(awareness_dirs.adapters_dir, PROBE, "other")
    # A file where the probe's instance directory belongs: creating it fails with an OSError
    # whatever the user's privileges.
    blocked = awareness_dirs.instance_dir("probe")
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a directory")

    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    assert [a.name for a in await client.adapters()] == ["other"]
    await client.close()
    assert "adapter probe not registered: cannot set up the config and data of adapter probe" in (
        awareness_dirs.stderr()
    )
