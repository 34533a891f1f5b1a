"""`python -m fault_proxy.tcp serve --api 127.0.0.1:8474 [--seed N]`."""

from fault_proxy.tcp.cli import tcp_app

tcp_app(prog_name="python -m fault_proxy.tcp")
