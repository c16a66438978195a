"""Which tools read sensitive data, and under what dataset name the replacement names them.

Built-in tools are never sensitive; a tool says it is with a truthy `sensitive` attribute and
names its dataset with `dataset` (empty: the tool's name), as Hand tools do from `ToolSpec`.
"""

from __future__ import annotations

from collections.abc import Iterable

from mind.tools.base import Tool


def dataset_of(tool: Tool) -> str:
    """The dataset a sensitive tool reads; "" when the tool is not sensitive."""
    if not getattr(tool, "sensitive", False):
        return ""
    return str(getattr(tool, "dataset", "") or tool.name)


def sensitive_tools(tools: Iterable[Tool]) -> dict[str, str]:
    """Tool name → dataset, for the sensitive ones among `tools`."""
    return {tool.name: dataset for tool in tools if (dataset := dataset_of(tool))}
