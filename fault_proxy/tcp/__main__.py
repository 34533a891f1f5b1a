"""`python -m fault_proxy.tcp serve --api 127.0.0.1:8474 [--seed N]`."""

from fault_proxy.cli_run import main_for
from fault_proxy.tcp.cli import tcp_app

main_for(tcp_app, "python -m fault_proxy.tcp")
