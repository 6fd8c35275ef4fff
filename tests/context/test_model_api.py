"""Structured outputs and prompt caching: the real SDKs against fake model APIs on loopback."""

import copy
import json

import pytest
from jsonschema import Draft202012Validator

from conversation_app.services import CHAT_TURN
from digests.generate import AGGREGATE_DIGEST, PER_FILE_DIGEST, generate_file_digest
from llm_platform import gateway
from llm_platform.base import LLMRequest
from llm_platform.ir import build_envelope
from llm_platform.ir.types import sources_from_spans
from llm_platform.model_task import EnvelopePrompt, ModelTask, TaskFailed, TextPrompt, run_model_task
from llm_platform.models import LLMCall
from llm_platform.output_schema import sent_schema
from llm_platform.prompts import load_schema, prompts_dir
from research_app.runs.model_tasks import RESEARCH_TASKS
from tests.fake_anthropic import text_of

pytestmark = pytest.mark.django_db

SPANS = [{"span_id": "S1", "text": "The reservoir held 1.2 million m3 in August 2023."}]
EVERY_TASK = (PER_FILE_DIGEST, AGGREGATE_DIGEST, CHAT_TURN, *RESEARCH_TASKS)
SCHEMAS = sorted(path.name.removesuffix(".schema.json") for path in (prompts_dir() / "schemas").glob("*.schema.json"))


def schema_nodes(schema):
    """Every dict in a schema, with the keys that are property names (under `properties`) left out."""
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key in ("properties", "$defs"):
                for sub in value.values():
                    yield from schema_nodes(sub)
            else:
                yield from schema_nodes(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from schema_nodes(item)


# --- the sent copy of a schema ---------------------------------------------------


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_sent_schema_keeps_only_what_structured_outputs_accept(name):
    full = load_schema(name)
    original = copy.deepcopy(full)
    sent = sent_schema(full)

    assert full == original  # validation keeps the whole schema
    Draft202012Validator.check_schema(sent)
    for node in schema_nodes(sent):
        refused = {"minLength", "maxLength", "pattern", "minimum", "maximum", "maxItems", "$schema", "$id"}
        assert not refused & set(node), node
        assert node.get("minItems", 0) <= 1
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
    # What it keeps: the shape (types, required fields, enums and consts).
    assert sent.get("required") == full.get("required")
    assert json.dumps(sent).count('"enum"') == json.dumps(full).count('"enum"')


def test_the_sent_schema_adapts_keywords_not_property_names():
    schema = {
        "type": "object",
        "additionalProperties": True,
        "properties": {
            "format": {"type": "string", "minLength": 1, "pattern": "\\S"},
            "pattern": {"type": "array", "minItems": 2, "maxItems": 8, "items": {"type": "integer", "minimum": 1}},
            "choice": {"oneOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["format"],
    }
    assert sent_schema(schema) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "format": {"type": "string"},
            "pattern": {"type": "array", "items": {"type": "integer"}},
            "choice": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["format"],
    }


# --- Anthropic: output_config, cache_control, cache tokens --------------------------


@pytest.mark.parametrize("task", EVERY_TASK, ids=lambda task: task.name)
def test_each_task_sends_its_schema_as_the_output_format(fake_anthropic, task: ModelTask):
    fake_anthropic.script(("status", 400))  # the request is what this test reads
    with pytest.raises(TaskFailed):
        run_model_task(task, TextPrompt(f"TASK: {task.name}\nINPUT_JSON: {{}}"))
    [sent] = fake_anthropic.message_requests()
    assert sent["body"]["output_config"] == {
        "format": {"type": "json_schema", "schema": sent_schema(load_schema(task.schema))}
    }


def test_an_answer_the_schema_shape_allows_is_still_checked_in_full(fake_anthropic):
    """Structure is guaranteed, truth is not: an empty claim and an invented source are caught and repaired."""

    def hollow(answer: dict) -> dict:
        answer["facts"][0]["claim"] = ""
        answer["facts"][0]["sources"] = ["levels.txt::S99"]
        return answer

    fake_anthropic.script(("rewrite", "PER_FILE_DIGEST", hollow))
    generated = generate_file_digest(filename="levels.txt", format="text", spans=SPANS)

    sent, _repair = fake_anthropic.message_requests()
    assert sent["body"]["output_config"]["format"]["schema"] == sent_schema(load_schema("per_file_digest"))
    first, repair = LLMCall.objects.order_by("id")
    assert first.outcome == "invalid" and "claim" in first.error
    assert repair.attempt == 2 and repair.outcome == "ok"
    assert generated.content["facts"][0]["sources"] == ["levels.txt::S1"]


def test_the_system_prompt_is_a_cache_breakpoint_and_cache_tokens_are_recorded(fake_anthropic):
    generate_file_digest(filename="levels.txt", format="text", spans=SPANS)
    generate_file_digest(filename="other.txt", format="text", spans=SPANS)

    first, second = fake_anthropic.message_requests()
    [system] = first["body"]["system"]
    assert system["cache_control"] == {"type": "ephemeral"}
    assert system["text"] == PER_FILE_DIGEST.system()
    written, read = LLMCall.objects.order_by("id")
    # The first call writes the system prompt to the cache, the second reads it from there.
    assert written.cache_creation_input_tokens > 0 and written.cache_read_input_tokens == 0
    assert read.cache_read_input_tokens == written.cache_creation_input_tokens
    assert read.cache_creation_input_tokens == 0
    assert read.input_tokens < written.input_tokens + written.cache_creation_input_tokens


def test_a_context_sent_again_comes_first_as_a_cache_breakpoint_and_the_task_last(fake_anthropic):
    source = sources_from_spans("levels.txt", "text", SPANS)
    envelope = build_envelope("TASK: ECHO\nwhat was held?", [source])
    provider = gateway.get_provider()
    body = provider.params(LLMRequest.from_envelope("echo", "SYSTEM", envelope, cache_context=True))

    *context, task = body["messages"][0]["content"]
    assert context[-1]["cache_control"] == {"type": "ephemeral"}
    assert "=== CONTEXT INDEX ===" in context[-1]["text"] and "reservoir" in context[-1]["text"]
    assert "cache_control" not in task and task["text"].startswith("=== TASK ===")
    assert text_of(body["messages"][0]["content"]) == LLMRequest.from_envelope("echo", "S", envelope).prompt
    breakpoints = [b for b in [*body["system"], *body["messages"][0]["content"]] if "cache_control" in b]
    assert len(breakpoints) == 2  # the API allows four


def test_a_conversation_marks_its_context_for_caching_and_a_research_step_does_not(fake_anthropic):
    chat = EnvelopePrompt({"message": "hi"}, [sources_from_spans("levels.txt", "text", SPANS)], cache_context=True)
    step = EnvelopePrompt({"question": "q"}, [sources_from_spans("levels.txt", "text", SPANS)])
    provider = gateway.get_provider()
    for prompt, marked in ((chat, True), (step, False)):
        content = provider.params(prompt.request(CHAT_TURN, provider, None))["messages"][0]["content"]
        assert ("cache_control" in content[-2]) is marked


def test_the_prompt_cache_setting_turns_every_marker_off(fake_anthropic, settings):
    generate_file_digest(filename="levels.txt", format="text", spans=SPANS)
    settings.GROUNDWORK_LLM_PROMPT_CACHE = False
    generate_file_digest(filename="levels.txt", format="text", spans=SPANS)
    marked, unmarked = fake_anthropic.message_requests()
    assert "cache_control" in json.dumps(marked["body"]) and "cache_control" not in json.dumps(unmarked["body"])
    assert [(c.cache_creation_input_tokens > 0, c.cache_read_input_tokens) for c in LLMCall.objects.order_by("id")] == [
        (True, 0),
        (False, 0),
    ]


# --- OpenAI-compatible: response_format, or plain words where refused --------------


def test_an_openai_compatible_server_gets_the_schema_as_response_format(fake_openai):
    generate_file_digest(filename="levels.txt", format="text", spans=SPANS)
    [sent] = fake_openai.requests
    assert sent["body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "per_file_digest", "schema": sent_schema(load_schema("per_file_digest"))},
    }
    assert "JSON Schema" not in sent["body"]["messages"][0]["content"]


def test_a_server_that_refuses_response_format_is_asked_in_plain_words(fake_openai):
    fake_openai.json_schema = "reject"
    generate_file_digest(filename="levels.txt", format="text", spans=SPANS)
    generate_file_digest(filename="other.txt", format="text", spans=SPANS)

    refused, answered, second = fake_openai.requests
    assert refused["body"]["response_format"]["type"] == "json_schema"
    assert "response_format" not in answered["body"]
    system = answered["body"]["messages"][0]["content"]
    assert system.startswith(PER_FILE_DIGEST.system().rstrip("\n"))
    assert "matches this JSON Schema" in system and '"facts"' in system
    assert "response_format" not in second["body"]  # remembered: no second refusal
    assert [c.outcome for c in LLMCall.objects.order_by("id")] == ["ok", "ok"]
