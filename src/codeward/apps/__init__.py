"""The applications over everything below: the command line (``cli``), the control plane and console
(``control``), the agent shell (``agent``), client setup (``client_setup``) and the generated docs
(``docs``)."""
