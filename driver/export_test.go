package driver

// Defect is a fault a test can plant in a driver.
type Defect = defect

// Defects a test can plant in a driver, to prove that a harness catches them.
const (
	DefectNoBackoff    = defectNoBackoff
	DefectRequestsLost = defectRequestsLost
	DefectOutcomeLost  = defectOutcomeLost

	DefectIDUnstored  = defectIDUnstored
	DefectNoGate      = defectNoGate
	DefectUnconfirmed = defectUnconfirmed
)

// Planted returns cfg with defect planted in the driver it configures.
func Planted[Spec, Status any](cfg Config[Spec, Status], d Defect) Config[Spec, Status] {
	cfg.defects |= d
	return cfg
}
