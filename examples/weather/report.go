package weather

import (
	"context"
	"fmt"
	"strings"
	"time"

	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/runtime"
)

// Defaults of GetClimateReport.
const (
	defaultReportYears = 3
	// defaultReportStep is how long the report takes per year: slow enough to be worth
	// running as a task, fast enough for a demo.
	defaultReportStep = 500 * time.Millisecond
)

// GetClimateReport compiles a made-up but deterministic climate report, a year at a time, with
// a progress notification per year. It is an ordinary typed handler: run as a task (the tool
// allows it), the runtime calls it detached from the request that started it, and cancelling
// the task cancels ctx, which ends it between two years.
func (s *Service) GetClimateReport(ctx context.Context, req *weatherv1.GetClimateReportRequest) (*weatherv1.GetClimateReportResponse, error) {
	place, err := resolve(&weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: req.GetCity()}})
	if err != nil {
		return nil, err
	}
	years := int32(defaultReportYears)
	if req.Years != nil {
		years = req.GetYears()
	}
	if years < 1 || years > 10 {
		return nil, fmt.Errorf("years must be between 1 and 10, got %d", years)
	}
	step := s.ReportStep
	if step == 0 {
		step = defaultReportStep
	}
	last := s.now().UTC().Year() - 1
	out := &weatherv1.GetClimateReportResponse{Place: place}
	var wettest *weatherv1.ClimateYear
	for i := range int(years) {
		t := time.NewTimer(step)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		y := climateYear(place.GetName(), int32(last-i))
		out.Years = append(out.Years, y)
		if wettest == nil || y.GetRainyDays() > wettest.GetRainyDays() {
			wettest = y
		}
		// Progress is best effort: a client that is not reading must not fail the report.
		_ = runtime.CallerFrom(ctx).NotifyProgress(ctx, float64(i+1), float64(years), fmt.Sprintf("analysed %d", y.GetYear()))
	}
	out.Summary = fmt.Sprintf("%s over %d years: the wettest was %d, with %d rainy days.",
		strings.TrimSpace(place.GetName()), years, wettest.GetYear(), wettest.GetRainyDays())
	return out, nil
}

// climateYear is the made-up climate of one year in a place.
func climateYear(place string, year int32) *weatherv1.ClimateYear {
	h := hash(fmt.Sprintf("%s/%d", place, year))
	return &weatherv1.ClimateYear{
		Year:      year,
		MeanHigh:  float64(10+h%12) + float64(h/12%10)/10,
		RainyDays: int32(80 + h/120%90),
	}
}
