from fault_proxy.cli import main

main()
