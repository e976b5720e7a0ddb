"""The web console in a real headless Chromium, watching a running ``codeward ask --control``:
live tool calls appear, a click approves a pending call and the call proceeds, a click denies."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.control_support import Lines, agent_env, finish
from tests.fake_openai import FakeOpenAI, text, tool_calls

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (Debian package 'chromium')")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def test_console_shows_live_calls_and_approves_and_denies_by_click(browser: Any, root: Path, tmp_path: Path) -> None:
    replies = [
        tool_calls(("write_file", '{"path": "x.txt", "content": "approved by a click"}')),
        tool_calls(("read_file", '{"path": "x.txt"}')),
        tool_calls(("write_file", '{"path": "y.txt", "content": "should not exist"}')),
        text("Wrote x.txt; y.txt was refused."),
    ]
    with FakeOpenAI(replies) as fake:
        proc = subprocess.Popen([sys.executable, "-m", "codeward", "ask", "write two files", "--control",
                                 "--control-port", "0"], cwd=root, env=agent_env(fake, tmp_path / "home"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stderr = Lines(proc.stderr)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            console_url = stderr.wait_for(re.compile(r"web console: (\S+)")).group(1)
            page.goto(console_url)
            assert page.url.endswith("/console/")  # the token left the address bar for a cookie
            page.wait_for_selector("#connection[data-state='live']")

            first = page.locator("article.ask[data-tool='write_file']")
            first.wait_for()
            assert "approved by a click" in first.inner_text()
            # the card shows the change as a diff (a new file), not only the arguments as JSON
            diff = first.locator("[data-testid='preview']")
            assert "+++ b/x.txt" in diff.inner_text() and "+approved by a click" in diff.inner_text()
            assert first.locator("[data-testid='preview'] .line.add").count() >= 1
            row = page.locator("#calls tr[data-tool='write_file']").first
            assert row.get_attribute("data-status") == "awaiting_approval"
            assert not (root / "x.txt").exists()

            first.get_by_role("button", name="Approve").click()
            page.wait_for_selector("#calls tr[data-tool='write_file'][data-status='ok']")
            # a call that started after the page loaded arrives live, with its result preview
            read = page.locator("#calls tr[data-tool='read_file'][data-status='ok']")
            read.wait_for()
            assert "approved by a click" in read.inner_text()

            second = page.locator("article.ask[data-tool='write_file']")
            second.wait_for()
            assert "y.txt" in second.inner_text()
            page.wait_for_selector("#figures dd")
            page.locator("#conversation li.turn.user").first.wait_for()
            assert "write two files" in page.locator("#conversation").inner_text()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "control-console.png"), full_page=True)

            second.get_by_role("button", name="Deny").click()
            page.wait_for_selector("#calls tr[data-status='denied']")
            assert page.locator("article.ask").count() == 0
            out = finish(proc)
        finally:
            page.close()
            proc.kill()
    assert proc.returncode == 0 and out.strip() == "Wrote x.txt; y.txt was refused."
    assert (root / "x.txt").read_text() == "approved by a click" and not (root / "y.txt").exists()
    log = stderr.text()
    assert "write_file: approved in the console" in log and "write_file: denied in the console" in log
    assert (ARTIFACTS / "control-console.png").stat().st_size > 10_000


def test_console_without_the_token_says_how_to_get_in(browser: Any, root: Path, tmp_path: Path) -> None:
    from codeward.apps.control.server import ControlServer
    from codeward.apps.control.state import ControlState

    with ControlServer(ControlState(), port=0) as server:
        page = browser.new_page()
        try:
            response = page.goto(f"{server.url}/console/")
            assert response is not None and response.status == 401
            assert "console URL printed in the terminal" in page.inner_text("body")
            page.goto(server.console_url)
            page.wait_for_selector("#connection[data-state='live']")
            assert page.inner_text("#approvals") == "Nothing is waiting for you."
        finally:
            page.close()


def test_serve_control_shows_an_mcp_clients_call_and_a_click_approves_it(
        browser: Any, root: Path, tmp_path: Path) -> None:
    """A client that cannot elicit (the SDK's default Client) calls write_file on `serve --control`:
    the console shows the call waiting, a click approves it and the client gets its result;
    select_tab from a script moves the console; a denied second call never writes."""
    import os
    import threading
    import time

    import anyio
    from mcp import Client, StdioServerParameters

    from codeward.apps.control.client import ApiHookClient
    from tests.process_support import free_port

    port = free_port()
    home = tmp_path / "home"
    results: dict[str, Any] = {}

    def client_session() -> None:
        async def talk() -> None:
            params = StdioServerParameters(
                command=sys.executable, args=["-m", "codeward", "serve", str(root), "--control", "--control-port",
                                              str(port)], env={**os.environ, "CODEWARD_HOME": str(home)})
            async with Client(params) as client:
                results["listed"] = {t.name for t in (await client.list_tools()).tools}
                results["first"] = await client.call_tool("write_file", {"path": "x.txt", "content": "by a click"})
                results["second"] = await client.call_tool("write_file", {"path": "y.txt", "content": "never"})

        try:
            anyio.run(talk)
        except BaseException as exc:  # reported below
            results["error"] = exc

    thread = threading.Thread(target=client_session, daemon=True)
    thread.start()
    token_path = home / "control" / f"{port}.token"
    deadline = time.monotonic() + 60
    while not token_path.exists():
        assert time.monotonic() < deadline and "error" not in results, results
        time.sleep(0.05)
    token = token_path.read_text().strip()
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"http://127.0.0.1:{port}/?token={token}")
        page.wait_for_selector("#connection[data-state='live']")
        card = page.locator("article.ask[data-tool='write_file']")
        card.wait_for(timeout=60_000)
        assert "x.txt" in card.inner_text()
        assert page.locator("#calls tr[data-tool='write_file']").first.get_attribute("data-status") == \
            "awaiting_approval"
        assert not (root / "x.txt").exists()

        hooks = ApiHookClient(f"http://127.0.0.1:{port}", token)
        assert hooks.get_mma_status()["pending_tool_approval"] is True
        hooks.select_tab("console", "calls")
        page.wait_for_selector("#calls-section.active-tab")

        card.get_by_role("button", name="Approve").click()
        page.wait_for_selector("#calls tr[data-tool='write_file'][data-status='ok']")
        second = page.locator("article.ask[data-tool='write_file']")
        second.wait_for()
        assert "y.txt" in second.inner_text()
        second.get_by_role("button", name="Deny").click()
        thread.join(60)
    finally:
        page.close()
    assert "error" not in results, results.get("error")
    assert "write_file" in results["listed"]
    assert not results["first"].is_error and (root / "x.txt").read_text() == "by a click"
    assert results["second"].is_error and not (root / "y.txt").exists()


def test_a_console_answers_calls_waiting_on_another_replica(browser: Any, tmp_path: Path) -> None:
    """Two gateway replicas on one Redis: a call waiting for approval on replica A shows in replica B's
    console; a click there releases it on A (approve, then deny); a forged approval id is refused and
    releases nothing; the audit names the console as who answered and alice as who called."""
    import json
    import threading
    import time

    import anyio
    import httpx2 as httpx
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from tests.process_support import free_port, stop
    from tests.replica_support import ALICE, TOKEN, gateway_config, have, redis_server, start_replica

    if have("redis-server") is not None:
        pytest.skip("redis-server is not installed (scripts/test installs it)")
    with redis_server(tmp_path) as redis_port:
        config = gateway_config(tmp_path, redis_port)
        console_port, home = free_port(), tmp_path / "home"
        holder = start_replica(config)
        answering = start_replica(config, args=["--control", "--control-port", str(console_port)],
                                  env={"CODEWARD_HOME": str(home)})
        results: list[Any] = []
        errors: list[BaseException] = []

        def calls() -> None:  # alice's client, on replica A only
            async def talk() -> None:
                async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}, timeout=120) as http, \
                        Client(streamable_http_client(f"http://127.0.0.1:{holder[1]}/mcp", http_client=http),
                               mode="legacy") as client:
                    for _ in range(2):
                        results.append(await client.call_tool("peer__count", {}))

            try:
                anyio.run(talk)
            except BaseException as exc:  # reported below
                errors.append(exc)

        thread = threading.Thread(target=calls, daemon=True)
        thread.start()
        token_path = home / "control" / f"{console_port}.token"
        deadline = time.monotonic() + 60
        while not token_path.exists():
            assert time.monotonic() < deadline, "replica B's console did not start"
            time.sleep(0.05)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"http://127.0.0.1:{console_port}/?token={token_path.read_text().strip()}")
            page.wait_for_selector("#connection[data-state='live']")
            card = page.locator("#replica-approvals article[data-tool='peer__count']")
            card.wait_for(timeout=60_000)
            assert f"waiting on replica {card.get_attribute('data-replica')}" in card.inner_text()
            assert "called by alice" in card.inner_text()
            assert page.locator("#approvals article.ask").count() == 0, "not one of B's own asks"

            # A forged id: refused by name, and the real call is still waiting.
            forged = page.evaluate("""async () => {
                const r = await fetch('/api/replicas/approvals/forged-id', {method: 'POST',
                    headers: {'Content-Type': 'application/json'}, body: JSON.stringify({approved: true})});
                return [r.status, (await r.json()).message];
            }""")
            assert forged[0] == 404 and "forged-id" in forged[1], forged
            time.sleep(1.5)
            assert not results and card.count() == 1

            first_id = card.get_attribute("data-approval-id")
            card.get_by_role("button", name="Approve").click()
            page.wait_for_selector(f"#replica-approvals article[data-approval-id='{first_id}']", state="detached",
                                   timeout=30_000)
            second = page.locator("#replica-approvals article[data-tool='peer__count']")
            second.wait_for(timeout=60_000)
            second.get_by_role("button", name="Deny").click()
            thread.join(60)
            # B's performance panel adds up every replica's calls: both ran (one refused) on A, none on B.
            page.wait_for_function("""() => {
                const row = document.querySelector("#deployment-latency tr[data-tool='peer__count']");
                return row && row.children[1].textContent === "2" && row.children[2].textContent === "1";
            }""", timeout=30_000)
            assert "2 replicas" in page.locator("#deployment-note").inner_text()
        finally:
            page.close()
            stop(answering[0])
            stop(holder[0])
    assert not errors, errors
    approved, denied = results
    assert not approved.is_error and approved.content[0].text == "1", approved
    assert denied.is_error and "not approved" in denied.content[0].text, denied
    records = [json.loads(line) for path in sorted((tmp_path / "audit").glob("audit-*.jsonl"))
               for line in path.read_text(encoding="utf-8").splitlines()]
    answers = [(r["user"], r["outcome"], r["caller"]) for r in records if r["event"] == "answer"]
    assert answers == [("console", "approved", "alice"), ("console", "denied", "alice")], records
    assert all(r["held_by"] != r["replica"] for r in records if r["event"] == "answer")
    decisions = [(r["user"], r["outcome"], r["by"]) for r in records if r["event"] == "approval"]
    assert decisions == [("alice", "approved", "console"), ("alice", "denied", "console")], records
    assert TOKEN not in json.dumps(records)
