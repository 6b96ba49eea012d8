"""Running programs: ``croqvm.Program`` (the choice of device and engine), a run's inputs
and outputs, where independent runs execute, differential runs, schedule exploration and
replay files."""
