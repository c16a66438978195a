"""A Hand that hosts Model Context Protocol servers and offers their tools (`tobe hand serve
--mcp FILE`): `config` reads the `mcpServers` file, `servers` keeps one supervised client
session per server, `tools` turns MCP tools into Hand tools, `results` turns MCP results into
what the model sees, `host` ties them to a Hand.
"""
