package controller

// Defects a test can plant in a driver, to prove that a harness catches them.
const (
	DefectNoBackoff    = defectNoBackoff
	DefectRequestsLost = defectRequestsLost
)

// Planted returns cfg with defect planted in the driver it configures.
func Planted[Spec, Status any](cfg DriverConfig[Spec, Status], d defect) DriverConfig[Spec, Status] {
	cfg.defects |= d
	return cfg
}
