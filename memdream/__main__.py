from memdream.entry import main

main()
