"""With the operator allowing some domains (``[network]``), a run's only way out is the egress proxy —
and no trick sends it into the host, as root and as the unprivileged user: names that resolve to the
host's loopback (IPv4, IPv6, IPv4-mapped, ``0.0.0.0``), ``localhost``, metadata addresses, IP
literals in every notation, userinfo in the target, a trailing dot or capitals, and every way around
the proxy (a direct connection, DNS; no route at all). The harness's listener on the host's 127.0.0.1 must see
no connection; no packet leaves for anything but loopback (refused names are never resolved by DNS)."""

from __future__ import annotations

import json

import pytest

from tests.redteam.harness import PROJECT_CONFIG, Host

pytestmark = pytest.mark.anyio

NETWORK = """
[network]
allowed_domains = ["*.allowed.test", "localhost"]

[network.hosts]
"loop.allowed.test" = "127.0.0.1"
"v6.allowed.test" = "::1"
"mapped.allowed.test" = "::ffff:127.0.0.1"
"zero.allowed.test" = "0.0.0.0"
"meta.allowed.test" = "169.254.169.254"
"""


async def test_no_name_address_or_route_leads_into_the_host(host: Host) -> None:
    host.place("codeward.toml", PROJECT_CONFIG + NETWORK)
    host.rebaseline()
    port = host.listener.port
    targets = ["localhost", "loop.allowed.test", "LOOP.ALLOWED.TEST", "loop.allowed.test.", "v6.allowed.test",
               "mapped.allowed.test", "zero.allowed.test", "meta.allowed.test", "127.0.0.1", "[::1]", "2130706433",
               "0x7f000001", "127.1", "[::ffff:127.0.0.1]", "0.0.0.0"]
    crafted = [f"GET http://x.allowed.test@127.0.0.1:{port}/ HTTP/1.1\r\nHost: x.allowed.test\r\n\r\n",
               f"CONNECT 127.0.0.1:{port}@loop.allowed.test:{port} HTTP/1.1\r\n\r\n",
               f"GET http://loop.allowed.test:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n",
               f"GET /direct HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"]
    probe = (
        "import socket\n"
        "def attempt(what, fn):\n"
        "    try:\n"
        "        print(what, 'ANSWER', fn())\n"
        "    except OSError as exc:\n"
        "        print(what, 'blocked', type(exc).__name__)\n"
        "import base64, os, urllib.parse\n"
        "mine = urllib.parse.urlsplit(os.environ['HTTPS_PROXY'])\n"
        "credential = base64.b64encode(f'{mine.username}:{mine.password}'.encode()).decode()\n"
        "def crafted(text, auth=f'Proxy-Authorization: Basic {credential}\\r\\n'):\n"
        "    with socket.create_connection(('127.0.0.1', 3128), timeout=10) as s:\n"
        "        s.sendall((text[:-2] + auth + '\\r\\n').encode()); return s.recv(200).split(b'\\r\\n')[0]\n"
        f"for i, text in enumerate({crafted!r}):\n"
        "    attempt(f'crafted-{i}', lambda: crafted(text))\n"
        "allowed = 'GET http://loop.allowed.test/ HTTP/1.1\\r\\nHost: loop.allowed.test\\r\\n\\r\\n'\n"
        "attempt('no-credential', lambda: crafted(allowed, ''))\n"
        "forged = base64.b64encode(b'codeward:' + mine.password[::-1].encode()).decode()\n"
        "attempt('forged-credential', lambda: crafted(allowed, f'Proxy-Authorization: Basic {forged}\\r\\n'))\n"
        f"attempt('direct', lambda: socket.create_connection(('127.0.0.1', {port}), timeout=3).recv(100))\n"
        "attempt('dns', lambda: socket.getaddrinfo('loop.allowed.test', 80))\n"
        "v4, v6 = (open(f'/proc/net/{t}').read().splitlines() for t in ('route', 'ipv6_route'))\n"
        "print('routes', len(v4) - 1, 'v6 via', sorted({line.split()[-1] for line in v6}))\n")
    curls = "".join(f"echo {target} $(curl -sS --noproxy '' -o /dev/null -w '%{{http_code}}' "
                    f"'http://{target}:{port}/') $(curl -sS --noproxy '' -p 'http://{target}:{port}/' 2>&1 | "
                    "grep -c 'response 403');" for target in targets)
    async with host.serve() as session:
        answer = await session.call("run_shell", {"script": f"{curls}\npython3 - <<'EOF'\n{probe}EOF\n",
                                                  "timeout_s": 120})
    text = answer.text
    for target in targets:
        assert f"\n{target} 403 1\n" in f"\n{text}", text
    for i in range(len(crafted)):
        assert f"crafted-{i} ANSWER b'HTTP/1.1 403" in text or f"crafted-{i} ANSWER b'HTTP/1.1 400" in text, text
    for what in ("no-credential", "forged-credential"):  # a connection that is no run's is no run's way out
        assert f"{what} ANSWER b'HTTP/1.1 407 Proxy Authentication Required'" in text, text
    assert "routes 0 v6 via ['lo']" in text, text  # no route out: nothing but the proxy leads out
    for what in ("direct", "dns"):
        assert f"{what} blocked" in text, text
    assert "host listener" not in text, text
    assert "refused before connecting" in text and "is an IP address" in text, text
    # and the harness checks that its listener on the host's 127.0.0.1 saw no connection


EXECUTORS = """
[network]
[network.hosts]
"loop.allowed.test" = "127.0.0.1"
"v6.allowed.test" = "::1"
"mapped.allowed.test" = "::ffff:127.0.0.1"
"meta.allowed.test" = "169.254.169.254"
"private.allowed.test" = "10.1.2.3"

[network.code]
allowed_domains = ["*.allowed.test", "localhost"]

[network.registry]
allowed_domains = ["*.allowed.test", "localhost"]
"""
PROBE = """
import json, os, socket, urllib.error, urllib.request


def probe():
    proxy = bool(os.environ.get('HTTP_PROXY'))
    for name in ('NO_PROXY', 'no_proxy'):  # every target through the proxy, the box's own loopback too
        os.environ.pop(name, None)

    def attempt(fn):
        try:
            return 'ANSWER ' + str(fn())
        except urllib.error.HTTPError as exc:
            return f'HTTP {exc.code}'
        except OSError as exc:
            return 'blocked ' + type(exc).__name__

    def raw(text):
        with socket.create_connection(('127.0.0.1', 3128), timeout=10) as s:
            s.sendall(text.encode())
            return s.recv(200).split(b'\\r\\n')[0]

    found = {target: attempt(lambda target=target: urllib.request.urlopen(
        f'http://{target}:PORT/', timeout=10).read()[:40]) for target in TARGETS}
    found['direct'] = attempt(lambda: socket.create_connection(('127.0.0.1', PORT), timeout=3).recv(100))
    found['dns'] = attempt(lambda: socket.getaddrinfo('loop.allowed.test', 80))
    found['no-credential'] = attempt(lambda: raw(
        'GET http://loop.allowed.test/ HTTP/1.1\\r\\nHost: loop.allowed.test\\r\\n\\r\\n'))
    found['routes'] = len(open('/proc/net/route').read().splitlines()) - 1
    found['proxy'] = proxy
    return found
"""
EXECUTOR_TARGETS = ["localhost", "loop.allowed.test", "LOOP.ALLOWED.TEST.", "v6.allowed.test", "mapped.allowed.test",
                    "meta.allowed.test", "private.allowed.test", "127.0.0.1", "[::1]", "2130706433", "127.1",
                    "10.1.2.3", "169.254.169.254"]


async def test_code_and_registry_tools_have_the_proxy_alone_and_a_shell_without_a_list_has_none(host: Host) -> None:
    from tests.redteam.test_registry_attacks import person_signs, place, tool_text

    port = host.listener.port
    probe = PROBE.replace("PORT", str(port)).replace("TARGETS", repr(EXECUTOR_TARGETS))
    place(host, ".ai/tools/utility/netprobe.py", tool_text("    return probe()", header=probe,
                                                           description="Probe the network."))
    host.place("codeward.toml", PROJECT_CONFIG + EXECUTORS)
    person_signs(host, "netprobe")
    async with host.serve() as session:
        code = await session.call("coding_execute_code", {
            "language": "python", "code": probe + "\nprint('RESULT', json.dumps(probe()))", "timeout": 120})
        tool = await session.call("registry_execute", {"name": "netprobe"})
        shell = await session.call("run_shell", {"script": (
            "echo proxy=${HTTP_PROXY:-none}; curl -sS -o /dev/null -w '%{http_code}\\n' "
            f"-x http://127.0.0.1:3128 http://loop.allowed.test:{port}/"), "timeout_s": 60})
    assert not code.is_error and not tool.is_error, code.text + tool.text
    code_found = json.loads(code.structured["stdout"].split("RESULT ", 1)[1])
    tool_found = json.loads(tool.text[tool.text.index("{"):tool.text.rindex("}") + 1])
    for found in (code_found, tool_found):
        for target in EXECUTOR_TARGETS:
            assert found[target] == "HTTP 403", (target, found)
        assert found["direct"].startswith("blocked") and found["dns"].startswith("blocked"), found
        assert found["no-credential"] == "ANSWER b'HTTP/1.1 407 Proxy Authentication Required'", found
        assert found["routes"] == 0 and found["proxy"] is True, found
    assert "refused before connecting" in code.text and "[network.code] allowed_addresses" in code.text, code.text
    assert "refused before connecting" in tool.text and "[network.registry] allowed_addresses" in tool.text, tool.text
    # a run_shell with no list of its own ([network] lists nothing) is in the client's namespace, proxy and all,
    # but without a credential: code's and the tools' lists are not its way out
    assert "proxy=none" in shell.text and "\n407\n" in shell.text, shell.text
