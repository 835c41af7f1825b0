from commtune.cli import main

raise SystemExit(main())
