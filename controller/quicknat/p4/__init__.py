"""The compiled P4 program the controller pushes (p4src/build/, `make -C p4src`),
carried as package data so that an installed controller has it; in the source
tree these are links to p4src/build/."""
