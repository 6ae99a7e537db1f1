from memdream.cli import main

main()
