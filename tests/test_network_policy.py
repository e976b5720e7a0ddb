"""``[network]`` as an operator writes it: each mistake a clear error naming the key and the fix; and
the egress policy's decisions — wildcards, denied over allowed, IP literals, addresses after
resolution (the checks the proxy applies to every connection; tests/test_egress_proxy_mcp.py drives
them through a real server)."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeward.config import ConfigError, load_config
from codeward.config.network import ExecutorNetwork, NetworkSettings
from codeward.engines.sandbox.egress_policy import EgressPolicy
from tests.sandbox_support import bwrap_works


@pytest.mark.parametrize(("toml", "expected"), [
    ('allowed_domains = ["*"]', "would allow every domain"),
    ('allowed_domains = ["pypi.*"]', 'a wildcard is allowed only as the first label, as in "*.pypi.org"'),
    ('allowed_domains = ["10.0.0.1"]', "is an IP address, not a domain; list addresses in [network] allowed_addresses"),
    ('denied_domains = ["bad domain"]', "is not a domain name"),
    ('allowed_addresses = ["10.0.0.0/33"]', "is not an IP address or network"),
    ('hosts = { "pypi.test" = "nowhere" }', "the address is not an IP address"),
    ('allowed_domains = "pypi.org"', "allowed_domains"),
    ('[network.shel]\nallowed_domains = ["pypi.org"]',
     "[network.shel] is not an executor's table; the executors' tables are [network.shell] for run_shell and "
     "run_tests; [network.processes] for long-running processes; [network.code] for code execution; "
     "[network.registry] for registry tools"),
    ('[network.code]\nallowed_domains = ["*"]', "would allow every domain"),
    ('[network.registry]\nallowed_adresses = ["10.0.0.1"]', "allowed_adresses"),
    ('[network.code]\nhosts = { "a.test" = "10.0.0.1" }', "hosts"),
])
def test_a_bad_network_table_is_refused_with_the_fix(tmp_path: Path, toml: str, expected: str) -> None:
    path = tmp_path / "codeward.toml"
    path.write_text(f"[network]\n{toml}\n")  # a line starting with a table opens it after [network]
    with pytest.raises(ConfigError) as caught:
        load_config(str(path), user=False, environ={})
    assert expected in str(caught.value) and "network" in str(caught.value)


def test_a_good_table_loads_canonical(tmp_path: Path) -> None:
    path = tmp_path / "codeward.toml"
    path.write_text('[network]\nallowed_domains = ["PyPI.org.", "*.pythonhosted.org"]\n'
                    'hosts = { "Mirror.Test" = "[::1]" }\n')
    settings = load_config(str(path), user=False, environ={}).network
    assert settings.allowed_domains == ("pypi.org", "*.pythonhosted.org") and settings.active
    assert settings.hosts == {"mirror.test": "::1"}
    assert not NetworkSettings().active  # nothing listed: no proxy, no network


def test_each_executor_has_its_table_or_the_top_level_lists_and_code_and_tools_only_their_own(tmp_path: Path) -> None:
    path = tmp_path / "codeward.toml"
    path.write_text('[network]\nallowed_domains = ["pypi.org"]\ndenied_domains = ["bad.pypi.org"]\n'
                    'allowed_addresses = ["10.0.0.0/8"]\n'
                    '[network.processes]\nallowed_domains = ["*.npmjs.org"]\n'
                    '[network.code]\nallowed_domains = ["files.pythonhosted.org"]\ndenied_domains = ["x.test"]\n')
    settings = load_config(str(path), user=False, environ={}).network
    shell, processes, code, registry = (settings.lists(e) for e in ("shell", "processes", "code", "registry"))
    assert (shell.table, shell.allowed_domains, shell.allowed_addresses) == ("network", ("pypi.org",), ("10.0.0.0/8",))
    assert (processes.table, processes.allowed_domains, processes.allowed_addresses) == (
        "network.processes", ("*.npmjs.org",), ())  # its own table replaces the top-level lists...
    assert processes.denied_domains == ("bad.pypi.org",)  # ...but not what [network] denies
    assert code.allowed_domains == ("files.pythonhosted.org",) and code.denied_domains == ("bad.pypi.org", "x.test")
    assert not registry.active and registry.table == "network.registry"  # no table: no network, whatever [network]
    only_top = NetworkSettings(allowed_domains=("pypi.org",))
    assert only_top.lists("processes").active and not only_top.lists("code").active
    assert NetworkSettings(code=ExecutorNetwork(allowed_domains=("pypi.org",))).active  # the proxy is served
    refusal = EgressPolicy.of(settings, "code").refuse_name("bad.pypi.org") or ""
    assert "refused by [network] (or [network.code]) denied_domains ('bad.pypi.org')" in refusal, refusal
    assert 'adding "pypi.org" to [network.code] allowed_domains' in (
        EgressPolicy.of(settings, "code").refuse_name("pypi.org") or "")


def test_the_policy_decides_names_then_addresses() -> None:
    policy = EgressPolicy.of(NetworkSettings(
        allowed_domains=("pypi.org", "*.pythonhosted.org", "*.corp.test"), denied_domains=("*.evil.corp.test",),
        allowed_addresses=("10.9.0.0/16",), hosts={"mirror.corp.test": "10.9.1.2"}))
    assert policy.refuse_name("pypi.org") is None and policy.refuse_name("PYPI.ORG.") is None
    assert policy.refuse_name("files.pythonhosted.org") is None
    assert "not in [network] allowed_domains" in (policy.refuse_name("pythonhosted.org") or "")  # not the apex
    assert "not in [network] allowed_domains" in (policy.refuse_name("evilpypi.org") or "")
    assert "denied_domains ('*.evil.corp.test')" in (policy.refuse_name("a.evil.corp.test") or "")
    assert "is an IP address" in (policy.refuse_name("151.101.0.223") or "")
    assert policy.refuse_name("10.9.3.4") is None  # listed in allowed_addresses
    assert policy.fixed_address("mirror.corp.test") == ipaddress.ip_address("10.9.1.2")
    public = ipaddress.ip_address("151.101.0.223")
    assert policy.refuse_address("pypi.org", public) is None
    assert policy.refuse_address("mirror.corp.test", ipaddress.ip_address("10.9.1.2")) is None
    for address, kind in (("127.0.0.1", "loopback"), ("10.1.2.3", "private"), ("169.254.169.254", "cloud metadata"),
                          ("::ffff:192.168.0.1", "private (IPv4 192.168.0.1 inside IPv6)"), ("fe80::1", "link-local")):
        refusal = policy.refuse_address("pypi.org", ipaddress.ip_address(address)) or ""
        assert f"pypi.org resolves to {ipaddress.ip_address(address)}, a {kind} address" in refusal, refusal
        assert "[network] allowed_addresses" in refusal


def test_doctor_says_what_the_network_allows(tmp_path: Path) -> None:
    (tmp_path / "codeward.toml").write_text('[network]\nallowed_domains = ["pypi.org", "*.pythonhosted.org"]\n')
    done = subprocess.run([sys.executable, "-m", "codeward", "doctor", "--json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "none")})
    checks = {check["name"]: check for check in json.loads(done.stdout)["checks"]}
    egress = checks["egress proxy ([network] allowed_domains)"]
    assert egress["ok"] is bwrap_works(), egress  # it makes a namespace and listens in it, as a client's first run
    if egress["ok"]:
        assert egress["detail"] == (
            "run_shell and run_tests reach pypi.org, *.pythonhosted.org through the proxy ([network]), nothing else; "
            "long-running processes reach pypi.org, *.pythonhosted.org through the proxy ([network]), nothing else; "
            "code execution: no network ([network.code] allows no domain); "
            "registry tools: no network ([network.registry] allows no domain)")
