package accel

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// Tracker is an experiment tracker written in Go (Accelerate's GeneralTracker),
// started by InitTrackers on the main process.
type Tracker interface {
	// StoreInitConfiguration gets InitTrackers' config (nil when none was given).
	StoreInitConfiguration(runName string, config map[string]any) error
	// Log gets one Log call's values; step < 0 means the caller gave none.
	Log(values map[string]float64, step int64) error
	Finish() error
}

// trackerAdapter is the Tracker director; the accelerator owns it once added.
type trackerAdapter struct{ t Tracker }

func recovered(message *string) {
	if r := recover(); r != nil {
		*message = panicText(r)
	}
}

func (t *trackerAdapter) Init(runName, configJSON string) (message string) {
	defer recovered(&message)
	var config map[string]any
	if configJSON != "" {
		if err := json.Unmarshal([]byte(configJSON), &config); err != nil {
			return err.Error()
		}
	}
	return callbackResult(t.t.StoreInitConfiguration(runName, config))
}

func (t *trackerAdapter) Log(names core.StringVector, values core.DoubleVector, step int64) (message string) {
	defer recovered(&message)
	m := make(map[string]float64, names.Size())
	for i := 0; i < int(names.Size()); i++ {
		m[names.Get(i)] = values.Get(i)
	}
	return callbackResult(t.t.Log(m, step))
}

func (t *trackerAdapter) Finish() (message string) {
	defer recovered(&message)
	return callbackResult(t.t.Finish())
}

// AddTracker adds a Go tracker under name (before InitTrackers).
func (a *Accelerator) AddTracker(name string, tracker Tracker) error {
	if tracker == nil {
		return &Error{Code: ErrInvalidArgument, Msg: "AddTracker: tracker is nil"}
	}
	director := core.NewDirectorTracker(&trackerAdapter{tracker})
	if err := a.do(func(h core.Accelerator) { h.Add_tracker(director, name) }); err != nil {
		core.DeleteDirectorTracker(director) // not handed over
		return err
	}
	a.trackers = append(a.trackers, director)
	if _, taken := a.customTrackers[name]; !taken {
		if a.customTrackers == nil {
			a.customTrackers = map[string]Tracker{}
		}
		a.customTrackers[name] = tracker
	}
	return nil
}

// InitTrackers starts the trackers (LogWith and AddTracker) for projectName
// with an optional JSON-serialisable config, on the main process.
func (a *Accelerator) InitTrackers(projectName string, config map[string]any) error {
	return a.InitTrackersWith(projectName, config, nil)
}

// InitTrackersWith is InitTrackers with Accelerate's init_kwargs: options per
// built-in tracker, e.g. {"wandb": {"name": "run-1", "tags": []string{"baseline"}}}
// (docs/tracking.md). An option the tracker does not take is an error naming it.
func (a *Accelerator) InitTrackersWith(projectName string, config map[string]any, initKwargs map[string]map[string]any) error {
	configJSON, kwargsJSON := "", ""
	if config != nil {
		b, err := json.Marshal(config)
		if err != nil {
			return &Error{Code: ErrInvalidArgument, Msg: "InitTrackers config: " + err.Error()}
		}
		configJSON = string(b)
	}
	if initKwargs != nil {
		b, err := json.Marshal(initKwargs)
		if err != nil {
			return &Error{Code: ErrInvalidArgument, Msg: "InitTrackers initKwargs: " + err.Error()}
		}
		kwargsJSON = string(b)
	}
	return a.do(func(h core.Accelerator) { h.Init_trackers(projectName, configJSON, kwargsJSON) })
}

// Log sends scalar values to every tracker (main process); step < 0: none.
func (a *Accelerator) Log(values map[string]float64, step int64) error {
	return a.logScalars(values, func(h core.Accelerator, nv core.StringVector, vv core.DoubleVector) {
		h.Log(nv, vv, step)
	})
}

// LogTo is Accelerate's get_tracker(tracker).log(values, step): the values go
// to the running tracker called tracker alone; nothing happens where no
// tracker runs in this process. step < 0: none.
func (a *Accelerator) LogTo(tracker string, values map[string]float64, step int64) error {
	return a.logScalars(values, func(h core.Accelerator, nv core.StringVector, vv core.DoubleVector) {
		h.Log_to(tracker, nv, vv, step)
	})
}

// LogTextTo is LogText for the running tracker called tracker alone.
func (a *Accelerator) LogTextTo(tracker, tag, text string, step int64) error {
	return a.do(func(h core.Accelerator) { h.Log_text_to(tracker, tag, text, step) })
}

// logScalars hands values to send in name order (the same order in every process).
func (a *Accelerator) logScalars(values map[string]float64, send func(core.Accelerator, core.StringVector, core.DoubleVector)) error {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	nv := core.NewStringVector()
	defer core.DeleteStringVector(nv)
	vv := core.NewDoubleVector()
	defer core.DeleteDoubleVector(vv)
	for _, n := range names {
		nv.Add(n)
		vv.Add(values[n])
	}
	return a.do(func(h core.Accelerator) { send(h, nv, vv) })
}

// BuiltinTrackerNames are the built-in trackers' names, as LogWith takes
// them (besides "all"): the core's list.
func BuiltinTrackerNames() []string { return strings.Split(core.Builtin_tracker_names(), ",") }

// BuiltinTracker is a running built-in tracker as GetTracker gives it
// (Accelerate's TensorBoardTracker, WandBTracker, ...): Log writes to it alone.
// libaccel writes its files; InitTrackers starts it and EndTraining finishes it.
type BuiltinTracker struct {
	acc  *Accelerator
	name string
}

// Name is the tracker's LogWith name.
func (t *BuiltinTracker) Name() string { return t.name }

// Log sends values to this tracker; step < 0: none.
func (t *BuiltinTracker) Log(values map[string]float64, step int64) error {
	return t.acc.LogTo(t.name, values, step)
}

// LogText sends a text value to this tracker (ignored by trackers without text).
func (t *BuiltinTracker) LogText(tag, text string, step int64) error {
	return t.acc.LogTextTo(t.name, tag, text, step)
}

// StoreInitConfiguration is an error: the configuration goes to InitTrackers.
func (t *BuiltinTracker) StoreInitConfiguration(string, map[string]any) error {
	return &Error{Code: ErrState, Msg: "the " + t.name + " tracker records its configuration at InitTrackers"}
}

// Finish is an error: EndTraining finishes the trackers.
func (t *BuiltinTracker) Finish() error {
	return &Error{Code: ErrState, Msg: "the " + t.name + " tracker is finished by EndTraining"}
}

// blankTracker is Accelerate's blank tracker: it does nothing.
type blankTracker struct{}

func (blankTracker) StoreInitConfiguration(string, map[string]any) error { return nil }
func (blankTracker) Log(map[string]float64, int64) error                 { return nil }
func (blankTracker) Finish() error                                       { return nil }

// GetTracker is Accelerate's get_tracker(name): the Go tracker added under
// name, or for a running built-in tracker ("tensorboard", "jsonl", ...) a
// *BuiltinTracker whose Log writes to it alone. Where no tracker runs in this
// process (other processes, before InitTrackers) a Tracker that does nothing,
// as Accelerate's blank tracker; with trackers running, an ErrInvalidArgument
// error for a name none of them has.
func (a *Accelerator) GetTracker(name string) (Tracker, error) {
	if custom, found := a.customTrackers[name]; found {
		return custom, nil
	}
	running := false
	for _, n := range BuiltinTrackerNames() {
		has, err := a.HasTracker(n)
		if err != nil {
			return nil, err
		}
		if has && n == name {
			return &BuiltinTracker{acc: a, name: name}, nil
		}
		running = running || has
	}
	for n := range a.customTrackers {
		has, err := a.HasTracker(n)
		if err != nil {
			return nil, err
		}
		running = running || has
	}
	if running {
		return nil, &Error{Code: ErrInvalidArgument, Msg: name + " is not an available tracker stored inside the Accelerator"}
	}
	return blankTracker{}, nil
}

// LogText sends a text value to the trackers that take text; step < 0: none.
func (a *Accelerator) LogText(tag, text string, step int64) error {
	return a.do(func(h core.Accelerator) { h.Log_text(tag, text, step) })
}

// HasTracker tells whether a tracker of that name is active.
func (a *Accelerator) HasTracker(name string) (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.Has_tracker(name) })
}

// EndTraining finishes every tracker.
func (a *Accelerator) EndTraining() error {
	return a.do(func(h core.Accelerator) { h.End_training() })
}

// Profile records every LibTorch operator run inside body and writes a Chrome
// trace to outputTraceDir/trace_<rank>.json. The profiler records one OS
// thread, so the goroutine stays on its thread for the body.
func (a *Accelerator) Profile(outputTraceDir string, body func() error) error {
	return a.ProfileWith(ProfileKwargs{OutputTraceDir: outputTraceDir}, body)
}

// ProfileKwargs is Accelerate's ProfileKwargs: where the trace goes and what it
// records besides each operator: RecordShapes (each operator's "Input Dims"),
// ProfileMemory (CPU allocations as "[memory]" events) and WithFlops (the
// "flops" LibTorch counts for matmuls and convolutions); for operators a
// TorchScript model runs, WithStack (the model source lines that called them,
// "Call stack") and WithModules (the submodules they ran in, "Module
// Hierarchy"), as torch.profiler writes them.
// Schedule (torch.profiler.schedule, Accelerate's schedule_option) is counted
// by the step function ProfileSteps hands its body; OnTraceReady runs with the
// trace file and the steps taken when a cycle's trace was written.
type ProfileKwargs struct {
	OutputTraceDir                         string
	RecordShapes, ProfileMemory, WithFlops bool
	WithStack, WithModules                 bool
	Schedule                               *ProfileSchedule
	OnTraceReady                           func(tracePath string, stepNum int64) error
}

// ProfileSchedule is torch.profiler.schedule: after SkipFirst steps, cycles of
// Wait + Warmup unrecorded steps (LibTorch's legacy profiler needs no warm-up)
// and Active recorded ones, Repeat times (0: until the profile ends).
type ProfileSchedule struct{ Wait, Warmup, Active, Repeat, SkipFirst int64 }

// ProfileWith is Profile recording what kwargs asks for.
func (a *Accelerator) ProfileWith(kwargs ProfileKwargs, body func() error) error {
	return a.ProfileSteps(kwargs, func(func() error) error { return body() })
}

// ProfileSteps is ProfileWith whose body gets step, to call at the end of each
// training step (torch.profiler's prof.step()): it advances kwargs.Schedule and
// calls OnTraceReady when a cycle's trace was written.
func (a *Accelerator) ProfileSteps(kwargs ProfileKwargs, body func(step func() error) error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var run core.Profile
	begin := func() error {
		h, err := a.handle()
		if err != nil {
			return err
		}
		defer runtime.KeepAlive(a)
		run, err = call(func() core.Profile {
			if s := kwargs.Schedule; s != nil {
				return core.ProfileBegin_scheduled(h, kwargs.OutputTraceDir, kwargs.RecordShapes, kwargs.ProfileMemory,
					kwargs.WithFlops, kwargs.WithStack, kwargs.WithModules, s.Wait, s.Warmup, s.Active, s.Repeat, s.SkipFirst)
			}
			return core.ProfileBegin_with(h, kwargs.OutputTraceDir, kwargs.RecordShapes, kwargs.ProfileMemory, kwargs.WithFlops,
				kwargs.WithStack, kwargs.WithModules)
		})
		return err
	}
	end := func() error {
		defer core.DeleteProfile(run)
		return withThread(run.End)
	}
	var steps int64
	step := func() error {
		steps++
		ready, err := call(run.Step)
		if err != nil || !ready || kwargs.OnTraceReady == nil {
			return err
		}
		rank, err := a.ProcessIndex()
		if err != nil {
			return err
		}
		return kwargs.OnTraceReady(fmt.Sprintf("%s/trace_%d.json", kwargs.OutputTraceDir, rank), steps)
	}
	return scope(begin, end, func() error { return body(step) })
}

// ProgressBar is a terminal progress bar (on the main process only, by default).
type ProgressBar struct{ progressBarHandle }

type progressBarHandle = owned[core.ProgressBar]

var progressBarKind = handleKind[core.ProgressBar]{name: "ProgressBar", free: core.DeleteProgressBar}

// NewProgressBar makes a bar of total steps.
func NewProgressBar(total int64, description string, mainProcessOnly bool) (*ProgressBar, error) {
	h, err := call(func() core.ProgressBar { return core.NewProgressBar(total, description, mainProcessOnly) })
	if err != nil {
		return nil, err
	}
	return own(&ProgressBar{}, h), nil
}

// Update advances the bar.
func (p *ProgressBar) Update(steps int64) error {
	h, err := live(p, &progressBarKind)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(p)
	return withThread(func() { h.Update(steps) })
}

// Close finishes the bar; closing twice is fine.
func (p *ProgressBar) Close() error { return release(p, &progressBarKind) }

// LogLevel is a logging level (Python logging's numbers).
type LogLevel int

const (
	LogDebug    LogLevel = 10
	LogInfo     LogLevel = 20
	LogWarning  LogLevel = 30
	LogError    LogLevel = 40
	LogCritical LogLevel = 50
)

// Logger is Accelerate's get_logger: lines on stderr, from the main process only unless asked.
type Logger struct{ Name string }

// GetLogger returns the logger called name.
func GetLogger(name string) *Logger { return &Logger{Name: name} }

// Log writes message at level; mainProcessOnly keeps the other processes quiet.
func (l *Logger) Log(level LogLevel, message string, mainProcessOnly bool) error {
	return withThread(func() { core.Log_message(l.Name, core.Accel_log_level(level), message, mainProcessOnly) })
}

// Info logs on the main process.
func (l *Logger) Info(message string) error { return l.Log(LogInfo, message, true) }

// Warning logs on the main process.
func (l *Logger) Warning(message string) error { return l.Log(LogWarning, message, true) }

// Debug logs on the main process.
func (l *Logger) Debug(message string) error { return l.Log(LogDebug, message, true) }

// Error logs on the main process.
func (l *Logger) Error(message string) error { return l.Log(LogError, message, true) }

// Version is libaccel's version string.
func Version() string { v, _ := call(core.Version); return v }

// ABIVersion is the C ABI's version number.
func ABIVersion() int { v, _ := call(core.Abi_version); return v }

// Feature is an optional capability of the build.
type Feature int

const (
	FeatureGloo Feature = 1
	FeatureCUDA Feature = 2
	FeatureNCCL Feature = 3
)

// HasFeature tells whether this build and machine have the feature.
func HasFeature(f Feature) bool {
	v, _ := call(func() bool { return core.Has_feature(core.Accel_feature(f)) })
	return v
}
