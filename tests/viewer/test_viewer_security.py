"""Who the viewer answers: the token, the Host header and the origin of a change, as a table and over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from amplifier_module_tool_agent_memory.viewer import security

PORT = 8765


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        (f"127.0.0.1:{PORT}", True),
        (f"localhost:{PORT}", True),
        (f"LOCALHOST:{PORT}", True),
        ("127.0.0.1", False),  # a browser always names the port of a non-default one
        (f"127.0.0.1:{PORT + 1}", False),
        (f"evil.example:{PORT}", False),  # DNS rebinding: another name pointed at 127.0.0.1
        (f"127.0.0.1.nip.io:{PORT}", False),
        (f"0.0.0.0:{PORT}", False),
        ("", False),
        (None, False),
    ],
)
def test_only_loopback_names_with_our_port_are_hosts(host: str | None, allowed: bool) -> None:
    assert security.host_allowed(host, PORT) is allowed


@pytest.mark.parametrize(
    ("origin", "referer", "allowed"),
    [
        (f"http://127.0.0.1:{PORT}", None, True),
        (f"http://localhost:{PORT}", None, True),
        (f"http://localhost:{PORT}/", None, True),
        (f"https://127.0.0.1:{PORT}", None, False),
        (f"http://evil.example:{PORT}", None, False),
        ("null", None, False),  # a sandboxed frame or a file:// page
        (None, f"http://127.0.0.1:{PORT}/?token=x", True),
        (None, f"http://evil.example/?u=http://127.0.0.1:{PORT}", False),
        (None, None, False),
    ],
)
def test_a_change_must_come_from_our_own_origin(origin: str | None, referer: str | None, allowed: bool) -> None:
    assert security.same_origin(origin, referer, PORT) is allowed


def test_tokens_are_long_random_and_compared_whole() -> None:
    a, b = security.new_token(), security.new_token()
    assert a != b and len(a) >= 40
    assert security.token_matches(a, a)
    assert not security.token_matches(a[:-1], a)
    assert not security.token_matches(None, a)
    assert not security.token_matches("", a)


def test_no_data_without_the_token(served: Any) -> None:
    for path in ("/", "/api/summary", "/api/memories", "/api/working", "/api/plans", "/api/activity"):
        missing = served.get(path, token=None)
        wrong = served.get(path, token="not-the-token")
        assert (missing.status, wrong.status) == (403, 403), path
        assert missing.body["error"]["type"] == "forbidden"
    assert served.get("/api/summary").status == 200
    assert served.get("/api/summary", in_query=True).status == 200


def test_another_host_name_is_refused_even_with_the_token(served: Any) -> None:
    answer = served.get("/api/summary", host=f"attacker.example:{served.viewer.port}")
    assert answer.status == 403
    assert "127.0.0.1 or localhost" in answer.body["error"]["message"]
    assert served.get("/api/summary", host=f"localhost:{served.viewer.port}").status == 200


async def test_a_change_needs_post_the_token_in_a_header_and_our_origin(served: Any, call: Any) -> None:
    stored = await call.store(served.tools, "The build server is called hermes.", kind="fact")
    path = f"/api/memories/{stored['id']}/forget"
    assert served.get(path).status == 404  # not a GET route: reading never changes anything
    assert served.request("POST", path, headers={"Origin": f"http://127.0.0.1:{served.viewer.port}"},
                          in_query=True).status == 403  # the token only in the URL is not enough for a change
    assert served.request("POST", path).status == 403  # no Origin
    assert served.post(path, headers={"Origin": "http://evil.example"}).status == 403
    assert served.post(path, token=None).status == 403
    assert served.runtime.memory().get(stored["id"])["content"] == "The build server is called hermes."
    answer = served.post(path)
    assert answer.status == 200
    assert answer.body["deleted"]["id"] == stored["id"]
    assert served.get(f"/api/memories/{stored['id']}").status == 404


async def test_markup_in_a_memory_comes_back_as_text_under_a_strict_policy(served: Any, call: Any) -> None:
    markup = 'Note <script>window.pwned=1</script> and <img src=x onerror="pwned()">'
    await call.store(served.tools, markup, kind="note")
    answer = served.get("/api/memories")
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.body["memories"][0]["content"] == markup
    page = served.get("/")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store"


async def test_what_is_shown_is_redacted(served: Any, call: Any) -> None:
    secret = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    stored = await call.store(served.tools, f"The deploy key is {secret} for staging.", kind="fact")
    text = served.get(f"/api/memories/{stored['id']}").text
    assert secret not in text
    assert "REDACTED" in text.upper()


def test_bad_input_is_a_clear_error(served: Any) -> None:
    answer = served.get("/api/memories?kind=nope")
    assert answer.status == 400
    assert answer.body["error"]["message"].startswith("field 'kind'")
    unknown = served.get("/api/memories?colour=red")
    assert unknown.status == 400 and "colour" in unknown.body["error"]["message"]
    assert served.get("/api/memories/not-a-uuid").status == 400
    assert served.get("/api/working?budget=10").status == 400
    assert served.get("/api/nothing-here").status == 404
    assert served.request("DELETE", "/api/summary").status == 405
