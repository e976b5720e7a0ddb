"""Network access for tools: guarded HTTP fetching, readable pages and web search results.

Nothing here is a tool; :mod:`codeward.tools.web` builds ``fetch_url`` and ``web_search`` on it.
Every request goes through :mod:`codeward.engines.net.guard`, so a URL chosen by a model cannot reach
loopback, private or cloud-metadata addresses unless the operator allowed that host.
"""
