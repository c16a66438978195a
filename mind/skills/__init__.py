"""Skills: `.skill.md` instructions the model reads on demand, or always sees.

`frontmatter` parses one file, `loader` finds the files and settles name clashes, `catalog`
says which skills a conversation sees, `prompt` how its system prompt shows them, `tool` is
`view_skill`, `store` keeps the current catalog, and `watcher` reloads it (and the resources)
when the directories change.
"""
