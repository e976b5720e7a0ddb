"""The coding module: sandboxed execution of untrusted code, static review, monitoring, debugging.

The sandbox API (:mod:`codeward.engines.sandbox`) is the seam other tools use to run a
process contained; :mod:`codeward.engines.execution.execute` builds language execution on top of it.
"""
