from certification.cli import main

main()
