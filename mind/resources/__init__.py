"""Resources: `.md` documents under the resources directories that the model reads on demand.

`scan` finds them, `catalog` lists them for the system prompt and is the only way to read one,
`tool` is `read_resource`, `store` keeps the current catalog (reloaded by the skills watcher).
"""
