"""The four fakes: llama.cpp's llama-server, Ollama, vLLM and LM Studio, each in its own shapes.

Each class's docstring lists the facts it reproduces and where they come from; where the real
server's behaviour could not be confirmed from its source, the docstring says so.
"""

from __future__ import annotations

from typing import Any

from .local_model import prompt_tokens
from .local_server_base import LocalServer, Refusal, Reply, Turn, sse

CREATED = 1_735_689_600  # a fixed `created` for listings


def _response_format(body: dict[str, Any]) -> dict[str, Any]:
    value = body.get("response_format")
    return value if isinstance(value, dict) else {}


def _json_schema_of(response_format: dict[str, Any]) -> dict[str, Any] | None:
    inner = response_format.get("json_schema")
    if isinstance(inner, dict) and isinstance(inner.get("schema"), dict):
        return inner["schema"]
    return None


class LlamaServer(LocalServer):
    """llama.cpp `llama-server` (ggml-org/llama.cpp, tools/server: server.cpp routes,
    server-common.cpp `format_error_response`, server-context.cpp, README.md).

    - `GET /props`: `default_generation_settings.n_ctx` is the context loaded per slot, the
      limit; also `total_slots`, `model_path`, `chat_template`, `modalities`, `build_info`.
    - `GET /v1/models` (and `/models`): `data[].meta.n_ctx_train` is the model's training
      context — NOT the limit; `owned_by` "llamacpp".
    - `GET /health`: `{"status": "ok"}`.
    - One model per server: the request's `model` is not checked (single-model mode serves
      whatever name is sent).
    - Over the window: HTTP 400 `{"error": {"code": 400, "message": "request (N tokens) exceeds
      the available context size (M tokens), try increasing it", "type":
      "exceed_context_size_error", "n_prompt_tokens": N, "n_ctx": M}}`, checked on the prompt
      alone; `max_tokens` is not checked up front — generation stops where the window ends
      (`finish_reason` "length").
    - Structured output: `response_format` `{"type": "json_object"}` (optionally with a
      `schema`), `{"type": "json_schema", "json_schema": {"schema": …}}`, and the top-level
      `json_schema` field, all turned into a grammar.
    - Streaming: `object` "chat.completion.chunk", `system_fingerprint` the build; the usage
      chunk has empty `choices`, `usage` with `prompt_tokens_details.cached_tokens`, and
      `timings` (`prompt_n`, `predicted_n`, …).
    """

    kind = "llama-server"
    build = "b6500-fake"

    def get(self, path: str) -> Reply | None:
        if path == "/health":
            return Reply.json(200, {"status": "ok"})
        if path == "/props":
            return Reply.json(200, self._props())
        if path in ("/v1/models", "/models"):
            meta = {
                "vocab_type": 2,
                "n_vocab": 151936,
                "n_ctx_train": self.max_window,
                "n_embd": 3584,
                "n_params": 7_615_616_512,
                "size": 4_677_120_000,
            }
            return Reply.json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": self.model,
                            "object": "model",
                            "created": CREATED,
                            "owned_by": "llamacpp",
                            "meta": meta,
                        }
                    ],
                },
            )
        return None

    def _props(self) -> dict[str, Any]:
        return {
            "default_generation_settings": {
                "id": 0,
                "n_ctx": self.loaded_window,
                "speculative": False,
                "is_processing": False,
                "params": {"n_predict": -1, "temperature": 0.8, "top_k": 40, "top_p": 0.95},
            },
            "total_slots": 1,
            "model_path": f"/models/{self.model}.gguf",
            "chat_template": "{% for message in messages %}…{% endfor %}",
            "modalities": {"vision": False, "audio": False},
            "build_info": self.build,
        }

    def not_found(self, path: str) -> Reply:
        return Reply.json(
            404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}
        )

    def check_model(self, name: str) -> str:
        return name or self.model

    def structured_output(self, body: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
        response_format = _response_format(body)
        kind = response_format.get("type")
        if kind == "json_object":
            schema = response_format.get("schema")
            return "json_object", schema if isinstance(schema, dict) else None
        if kind == "json_schema":
            return "json_schema", _json_schema_of(response_format) or {}
        if isinstance(body.get("json_schema"), dict):
            return "json_schema", body["json_schema"]
        return None, None

    def admit(self, turn: Turn) -> bool:
        if turn.prompt_tokens <= self.loaded_window:
            return False
        message = (
            f"request ({turn.prompt_tokens} tokens) exceeds the available context size "
            f"({self.loaded_window} tokens), try increasing it"
        )
        error = {
            "code": 400,
            "message": message,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": turn.prompt_tokens,
            "n_ctx": self.loaded_window,
        }
        raise Refusal(Reply.json(400, {"error": error}))

    def chunk(self, turn: Turn, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
            "created": turn.created,
            "id": turn.chat_id,
            "model": turn.model,
            "system_fingerprint": self.build,
            "object": "chat.completion.chunk",
        }

    def usage(self, turn: Turn) -> dict[str, Any]:
        return {**super().usage(turn), "prompt_tokens_details": {"cached_tokens": 0}}

    def usage_chunk(self, turn: Turn) -> dict[str, Any]:
        chunk = super().usage_chunk(turn)
        chunk["timings"] = {
            "cache_n": 0,
            "prompt_n": turn.evaluated_tokens,
            "prompt_ms": 10.0,
            "predicted_n": turn.completion_tokens,
            "predicted_ms": 20.0,
        }
        return chunk

    def completion(self, turn: Turn) -> dict[str, Any]:
        return {
            "choices": [
                {
                    "finish_reason": turn.finish_reason,
                    "index": 0,
                    "message": {"role": "assistant", "content": turn.text},
                }
            ],
            "created": turn.created,
            "model": turn.model,
            "system_fingerprint": self.build,
            "object": "chat.completion",
            "usage": self.usage(turn),
            "id": turn.chat_id,
        }


class OllamaServer(LocalServer):
    """Ollama (ollama/ollama: server/routes.go, openai/openai.go, middleware/openai.go,
    api/types.go, server/prompt.go, docs/api.md, docs/api/openai-compatibility.mdx).

    - Names are `model:tag`; a name without a tag means `:latest` (docs/api.md "Model names").
    - `GET /api/tags`: `models[]` with `name`, `model`, `modified_at`, `size`, `digest`,
      `details`. `POST /api/show` (`model`): `model_info` with `general.architecture` and
      `"<arch>.context_length"` = the model's maximum (not what is loaded), `parameters`
      (Modelfile text), `details`, `capabilities`. `GET /api/ps`: loaded models with
      `context_length` = the context actually loaded (api/types.go `ProcessModelResponse`),
      the limit. `GET /api/version`: `{"version": …}`. `GET /`: "Ollama is running".
    - `GET /v1/models`: `data[]` of `{id, object: "model", created, owned_by}` (`owned_by` is
      the name's namespace, "library").
    - `/v1/chat/completions` takes no `options`: its request type has no such field, so an
      `options.num_ctx` sent there is ignored (openai/openai.go `ChatCompletionRequest`;
      docs/api/openai-compatibility.mdx "Setting the context size": the OpenAI API has no way
      to set it — make a Modelfile with `PARAMETER num_ctx`). Only `max_tokens` (→
      `num_predict`), `temperature`, `top_p`, `seed`, `stop` and the penalties map to options.
    - Over the window nothing is refused: `chatPrompt` drops the oldest messages (keeping
      system messages and always the last message) until the rendered prompt fits `num_ctx`,
      and the runner truncates a still-too-long last message (context shift, the default).
      `usage.prompt_tokens` counts what was kept.
    - `response_format` over /v1: `json_object` → `format: "json"`; `json_schema` →
      `format` = `json_schema.schema`; other types (and `json_schema` without a schema) are
      ignored.
    - Unknown model: 404, over /v1 as `{"error": {"message": "model 'x' not found", "type":
      "not_found_error", "param": null, "code": null}}` (openai.NewError).
    - Streaming chunks carry `system_fingerprint` "fp_ollama"; the finish chunk has an empty
      delta; with `include_usage` a chunk with empty `choices` and `usage`
      {prompt_tokens, completion_tokens, total_tokens} precedes `[DONE]`.
    """

    kind = "ollama"
    architecture = "qwen2"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if ":" not in self.model:
            self.model = f"{self.model}:latest"

    def _named(self, name: str) -> bool:
        return name == self.model or f"{name}:latest" == self.model

    def get(self, path: str) -> Reply | None:
        if path == "/":
            return Reply(body="Ollama is running", content_type="text/plain; charset=utf-8")
        if path == "/api/version":
            return Reply.json(200, {"version": "0.12.6"})
        if path == "/api/tags":
            return Reply.json(200, {"models": [self._listed()]})
        if path == "/api/ps":
            loaded = {
                **self._listed(),
                "expires_at": "2030-01-01T00:00:00Z",
                "size_vram": 5_000_000_000,
                "context_length": self.loaded_window,
            }
            del loaded["modified_at"]
            return Reply.json(200, {"models": [loaded]})
        if path == "/v1/models":
            item = {"id": self.model, "object": "model", "created": CREATED, "owned_by": "library"}
            return Reply.json(200, {"object": "list", "data": [item]})
        return None

    def _details(self) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.architecture,
            "families": [self.architecture],
            "parameter_size": "7.6B",
            "quantization_level": "Q4_K_M",
        }

    def _listed(self) -> dict[str, Any]:
        return {
            "name": self.model,
            "model": self.model,
            "modified_at": "2025-05-10T08:06:48.639712648-07:00",
            "size": 4_683_087_332,
            "digest": "845dbda0ea48ed749caafd9e6037047aa19acfcfd82e704d7ca97d631a0b697e",
            "details": self._details(),
        }

    def post(self, path: str, body: Any) -> Reply | None:
        if path != "/api/show":
            return None
        name = body.get("model") or body.get("name") if isinstance(body, dict) else None
        if not name:
            return Reply.json(400, {"error": "model is required"})
        if not self._named(str(name)):
            return Reply.json(404, {"error": f"model '{name}' not found"})
        arch = self.architecture
        return Reply.json(
            200,
            {
                "modelfile": f'# Modelfile generated by "ollama show"\nFROM {self.model}\n',
                "parameters": 'stop                           "<|im_end|>"',
                "template": "{{ .System }}{{ .Prompt }}",
                "details": self._details(),
                "model_info": {
                    "general.architecture": arch,
                    "general.parameter_count": 7_615_616_512,
                    f"{arch}.context_length": self.max_window,
                    f"{arch}.embedding_length": 3584,
                    f"{arch}.block_count": 28,
                },
                "capabilities": ["completion", "tools"],
                "modified_at": "2025-05-10T08:06:48.639712648-07:00",
            },
        )

    def check_model(self, name: str) -> str:
        if not name:
            raise Refusal(Reply.json(400, _ollama_error(400, "model is required")))
        if not self._named(name):
            raise Refusal(Reply.json(404, _ollama_error(404, f"model '{name}' not found")))
        return self.model

    def structured_output(self, body: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
        response_format = _response_format(body)
        kind = str(response_format.get("type", "")).strip().lower()
        if kind == "json_object":
            return "json_object", None
        if kind == "json_schema" and _json_schema_of(response_format) is not None:
            return "json_schema", _json_schema_of(response_format)
        return None, None

    def admit(self, turn: Turn) -> bool:
        if turn.prompt_tokens <= self.loaded_window:
            return False
        messages = [m for m in turn.body.get("messages", []) if isinstance(m, dict)]
        tools = turn.body.get("tools")
        kept = len(messages) - 1
        for start in range(len(messages)):
            dropped_system = [m for m in messages[:start] if m.get("role") == "system"]
            if prompt_tokens(dropped_system + messages[start:], tools) <= self.loaded_window:
                kept = start
                break
        dropped_system = [m for m in messages[:kept] if m.get("role") == "system"]
        turn.evaluated_tokens = min(
            prompt_tokens(dropped_system + messages[kept:], tools), self.loaded_window
        )
        return True

    def generation_room(self, turn: Turn) -> int:
        # The runner shifts the context while generating: a reply is not cut by the window.
        return self.loaded_window

    def chunk(self, turn: Turn, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": turn.chat_id,
            "object": "chat.completion.chunk",
            "created": turn.created,
            "model": turn.model,
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def completion(self, turn: Turn) -> dict[str, Any]:
        return {
            "id": turn.chat_id,
            "object": "chat.completion",
            "created": turn.created,
            "model": turn.model,
            "system_fingerprint": "fp_ollama",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": turn.text},
                    "finish_reason": turn.finish_reason,
                }
            ],
            "usage": self.usage(turn),
        }


def _ollama_error(status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class VllmServer(LocalServer):
    """vLLM's OpenAI-compatible server (vllm-project/vllm: vllm/entrypoints/openai/
    api_server.py, serving_models.py, protocol.py; vllm/renderers/params.py).

    - `GET /v1/models`: `data[]` with `id`, `object` "model", `created`, `owned_by` "vllm",
      `root`, `parent`, `max_model_len` = the window served (`--max-model-len`), the limit,
      and `permission`. `GET /health`: 200, empty. `GET /version`: `{"version": …}`.
    - Unknown model: 404 `{"error": {"message": "The model `x` does not exist.", "type":
      "NotFoundError", "param": "model", "code": 404}}`.
    - Over the window: checked on prompt + `max_tokens` (0 when absent) against
      `max_model_len`; HTTP 400 `{"error": {"message": …, "type": "BadRequestError",
      "param": "input_tokens", "code": 400}}` with the current wording "This model's maximum
      context length is L tokens. However, you requested M output tokens and your prompt
      contains P input tokens, for a total of T tokens. Please reduce the length of the input
      prompt or the number of requested output tokens." Older releases said "… However, you
      requested T tokens (P in the messages, M in the completion) …"; some builds between
      said "You passed P input tokens and requested M output tokens. However, the model's
      context length is only L tokens …", which does not name "maximum context length".
    - Structured output: `response_format` `json_object` / `json_schema`, the older
      `guided_json` and the newer `structured_outputs: {"json": …}`.
    - Streaming: chunks with `logprobs: null`; with `include_usage` a chunk with empty
      `choices` and `usage` (`prompt_tokens`, `total_tokens`, `completion_tokens`,
      `prompt_tokens_details: null`).
    """

    kind = "vllm"

    def get(self, path: str) -> Reply | None:
        if path == "/health":
            return Reply(body="", content_type="application/json")
        if path == "/version":
            return Reply.json(200, {"version": "0.11.0"})
        if path == "/v1/models":
            item = {
                "id": self.model,
                "object": "model",
                "created": CREATED,
                "owned_by": "vllm",
                "root": self.model,
                "parent": None,
                "max_model_len": self.loaded_window,
                "permission": [
                    {
                        "id": "modelperm-0",
                        "object": "model_permission",
                        "created": CREATED,
                        "allow_create_engine": False,
                        "allow_sampling": True,
                        "allow_logprobs": True,
                        "allow_search_indices": False,
                        "allow_view": True,
                        "allow_fine_tuning": False,
                        "organization": "*",
                        "group": None,
                        "is_blocking": False,
                    }
                ],
            }
            return Reply.json(200, {"object": "list", "data": [item]})
        return None

    def not_found(self, path: str) -> Reply:
        return Reply.json(404, {"detail": "Not Found"})

    @staticmethod
    def _error(status: int, kind: str, message: str, param: str | None) -> Reply:
        error = {"message": message, "type": kind, "param": param, "code": status}
        return Reply.json(status, {"error": error})

    def check_model(self, name: str) -> str:
        if name and name != self.model:
            raise Refusal(
                self._error(404, "NotFoundError", f"The model `{name}` does not exist.", "model")
            )
        return self.model

    def structured_output(self, body: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
        response_format = _response_format(body)
        kind = response_format.get("type")
        if kind == "json_object":
            return "json_object", None
        if kind == "json_schema":
            return "json_schema", _json_schema_of(response_format) or {}
        if isinstance(body.get("guided_json"), dict):
            return "json_schema", body["guided_json"]
        outputs = body.get("structured_outputs")
        if isinstance(outputs, dict) and isinstance(outputs.get("json"), dict):
            return "json_schema", outputs["json"]
        return None, None

    def admit(self, turn: Turn) -> bool:
        wanted = turn.max_tokens or 0
        total = turn.prompt_tokens + wanted
        if total <= self.loaded_window:
            return False
        message = (
            f"This model's maximum context length is {self.loaded_window} tokens. However, you "
            f"requested {wanted} output tokens and your prompt contains {turn.prompt_tokens} "
            f"input tokens, for a total of {total} tokens. Please reduce the length of the "
            "input prompt or the number of requested output tokens."
        )
        raise Refusal(self._error(400, "BadRequestError", message, "input_tokens"))

    def chunk(self, turn: Turn, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": turn.chat_id,
            "object": "chat.completion.chunk",
            "created": turn.created,
            "model": turn.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def usage(self, turn: Turn) -> dict[str, Any]:
        return {**super().usage(turn), "prompt_tokens_details": None}

    def completion(self, turn: Turn) -> dict[str, Any]:
        return {
            "id": turn.chat_id,
            "object": "chat.completion",
            "created": turn.created,
            "model": turn.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": turn.text, "tool_calls": []},
                    "logprobs": None,
                    "finish_reason": turn.finish_reason,
                    "stop_reason": None,
                }
            ],
            "usage": self.usage(turn),
            "prompt_logprobs": None,
        }


class LmStudioServer(LocalServer):
    """LM Studio's server (lmstudio.ai/docs: "LM Studio REST API (beta)" /api/v0, "OpenAI
    Compatibility API", "Structured Output"; lmstudio-ai/lmstudio-bug-tracker issues #169,
    #189, #307, #2322).

    - `GET /api/v0/models` (and `/api/v0/models/{id}`): `data[]` with `id`, `object`,
      `type` ("llm"), `publisher`, `arch`, `compatibility_type`, `quantization`, `state`
      ("loaded" | "not-loaded"), `max_context_length` (the model's maximum) and, when loaded,
      `loaded_context_length` — the limit.
    - `GET /v1/models`: `data[]` of `{id, object: "model", owned_by: "organization_owner"}`.
    - Structured output: `response_format` `json_schema` only; `text` is accepted and means
      prose; `json_object` is refused with HTTP 400 `{"error": "'response_format.type' must
      be 'json_schema' or 'text'"}` (a string, not an object; older builds said "must be
      'json_schema'").
    - Over the window (0.4.x): a streaming request is answered HTTP 200 `text/event-stream`
      with one `event: error` whose data is `{"error": {"message": "Input does not fit in
      context length. The input has N tokens, but the context length only supports M
      tokens."}, "message": …}` and nothing else (issue #2322, captured with mitmweb). The
      non-streaming answer is not documented; this fake sends HTTP 400 with the same message
      in `{"error": {"message": …}}` (an assumption). The model's own wording carries neither
      "maximum context length" nor a type.
    - Unknown model (not documented; an assumption): HTTP 404 `{"error": {"message": "Model
      \\"x\\" not found. …", "type": "invalid_request_error", "param": "model", "code":
      "model_not_found"}}`.
    """

    kind = "lmstudio"

    def _item(self) -> dict[str, Any]:
        return {
            "id": self.model,
            "object": "model",
            "type": "llm",
            "publisher": "lmstudio-community",
            "arch": "qwen2",
            "compatibility_type": "gguf",
            "quantization": "Q4_K_M",
            "state": "loaded",
            "max_context_length": self.max_window,
            "loaded_context_length": self.loaded_window,
        }

    def get(self, path: str) -> Reply | None:
        if path == "/api/v0/models":
            return Reply.json(200, {"object": "list", "data": [self._item()]})
        if path == f"/api/v0/models/{self.model}":
            return Reply.json(200, self._item())
        if path == "/v1/models":
            item = {"id": self.model, "object": "model", "owned_by": "organization_owner"}
            return Reply.json(200, {"data": [item], "object": "list"})
        return None

    def not_found(self, path: str) -> Reply:
        return Reply.json(200, {"error": f"Unexpected endpoint or method. (GET {path})"})

    def check_model(self, name: str) -> str:
        if name and name != self.model:
            error = {
                "message": f'Model "{name}" not found. Please check the model identifier.',
                "type": "invalid_request_error",
                "param": "model",
                "code": "model_not_found",
            }
            raise Refusal(Reply.json(404, {"error": error}))
        return self.model

    def structured_output(self, body: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
        response_format = _response_format(body)
        kind = response_format.get("type")
        if kind is None or kind == "text":
            return None, None
        if kind != "json_schema":
            error = "'response_format.type' must be 'json_schema' or 'text'"
            raise Refusal(Reply.json(400, {"error": error}))
        return "json_schema", _json_schema_of(response_format) or {}

    def admit(self, turn: Turn) -> bool:
        if turn.prompt_tokens <= self.loaded_window:
            return False
        message = (
            f"Input does not fit in context length. The input has {turn.prompt_tokens} tokens, "
            f"but the context length only supports {self.loaded_window} tokens."
        )
        if turn.stream:
            event = sse({"error": {"message": message}, "message": message}, event="error")
            raise Refusal(Reply(events=[event], content_type="text/event-stream"))
        raise Refusal(Reply.json(400, {"error": {"message": message}}))

    def chunk(self, turn: Turn, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": turn.chat_id,
            "object": "chat.completion.chunk",
            "created": turn.created,
            "model": turn.model,
            "system_fingerprint": turn.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def completion(self, turn: Turn) -> dict[str, Any]:
        return {
            "id": turn.chat_id,
            "object": "chat.completion",
            "created": turn.created,
            "model": turn.model,
            "choices": [
                {
                    "index": 0,
                    "logprobs": None,
                    "finish_reason": turn.finish_reason,
                    "message": {"role": "assistant", "content": turn.text},
                }
            ],
            "usage": self.usage(turn),
            "stats": {},
            "system_fingerprint": turn.model,
        }


KINDS: dict[str, type[LocalServer]] = {
    server.kind: server for server in (LlamaServer, OllamaServer, VllmServer, LmStudioServer)
}
