package driver

// Defect is a fault a test can plant in a driver.
type Defect = defect

// Defects a test can plant in a driver, to prove that a harness catches them.
const (
	DefectNoBackoff    = defectNoBackoff
	DefectRequestsLost = defectRequestsLost
	DefectOutcomeLost  = defectOutcomeLost

	DefectCheckpointDropped = defectCheckpointDropped
	DefectIDUnstored        = defectIDUnstored
	DefectNoGate            = defectNoGate
	DefectUnconfirmed       = defectUnconfirmed

	DefectPauseIgnored = defectPauseIgnored
	DefectCommandLost  = defectCommandLost
	DefectOperatorEcho = defectOperatorEcho

	DefectOperatorOverwritten = defectOperatorOverwritten
)

// Planted returns cfg with defect planted in the driver it configures.
func Planted[Spec, Status any](cfg Config[Spec, Status], d Defect) Config[Spec, Status] {
	cfg.defects |= d
	return cfg
}
