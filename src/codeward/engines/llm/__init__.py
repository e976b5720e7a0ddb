"""The one model client: OpenAI-compatible chat completions over the official ``openai`` SDK.

A low package (it imports nothing else of codeward) used by the agent's tool loop, by
``coding_debug_code`` and by the shell runner's QA step, so a model is configured one way
(``[model]`` profiles or ``OPENAI_*``) and every failure reads the same.

- :mod:`~codeward.config.model_profile` — :class:`ModelProfile`, the profiles of ``codeward.toml``;
- :mod:`~codeward.engines.llm.calls` — tool calls as streamed, accumulated and recognised in text;
- :mod:`~codeward.engines.llm.client` — :class:`ModelClient` (streaming events) and :func:`ask_text`.
"""
