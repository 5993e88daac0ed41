package accel

import (
	"runtime"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// Ptr returns a pointer to v, for the options fields where nil means "the
// library's default" and an explicit zero or false is also meaningful.
func Ptr[T any](v T) *T { return &v }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Model is a network: built from a JSON layer list or a TorchScript file.
type Model struct {
	modelHandle
	accelerator *Accelerator // once prepared
}

type modelHandle = owned[core.Model]

var modelKind = handleKind[core.Model]{name: "Model", free: core.DeleteModel}

func newModel(h core.Model, err error) (*Model, error) {
	if err != nil {
		return nil, err
	}
	return own(&Model{}, h), nil
}

// ModelFromJSON builds a model from a JSON list of PyTorch-named layers:
// `[{"type": "Linear", "in_features": 4, "out_features": 2}, {"type": "ReLU"}]`.
func ModelFromJSON(spec string) (*Model, error) {
	return newModel(call(func() core.Model { return core.ModelFrom_json(spec) }))
}

// ModelFromTorchScript loads a TorchScript module saved by torch.jit.save.
func ModelFromTorchScript(path string) (*Model, error) {
	return newModel(call(func() core.Model { return core.ModelFrom_torchscript(path) }))
}

func (m *Model) handle() (core.Model, error) { return live(m, &modelKind) }

// Close frees the model now (objects built on it keep what they need); closing twice is fine.
func (m *Model) Close() error {
	if m != nil {
		m.accelerator = nil
	}
	return release(m, &modelKind)
}

// Forward runs the model on input.
func (m *Model) Forward(input *Tensor) (*Tensor, error) {
	h, err := m.handle()
	if err != nil {
		return nil, err
	}
	in, err := input.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(m)
	defer runtime.KeepAlive(input)
	return tensorResult(call(func() core.Tensor { return h.Forward(in) }))
}

// Train switches training mode on or off (dropout, batch norm).
func (m *Model) Train(training bool) error {
	h, err := m.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(m)
	return withThread(func() { h.Train(training) })
}

// Eval is Train(false).
func (m *Model) Eval() error { return m.Train(false) }

// NumParameters counts the parameters (only the trainable ones if asked).
func (m *Model) NumParameters(trainableOnly bool) (int64, error) {
	h, err := m.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(m)
	return call(func() int64 { return h.Num_parameters(trainableOnly) })
}

// OptimizerKind selects the optimizer.
type OptimizerKind int

const (
	SGD     OptimizerKind = 1
	Adam    OptimizerKind = 2
	AdamW   OptimizerKind = 3
	RMSprop OptimizerKind = 4
	Adagrad OptimizerKind = 5
)

// OptimizerOptions use PyTorch's names. A zero field takes PyTorch's default
// for the kind; a nil pointer too.
type OptimizerOptions struct {
	Kind                    OptimizerKind // 0: AdamW
	LR                      float64
	WeightDecay             *float64 // nil: 0.01 for AdamW, else 0
	Momentum                float64  // SGD, RMSprop
	Dampening               float64  // SGD
	Nesterov                bool     // SGD
	Betas                   [2]float64
	Eps                     float64
	AMSGrad                 bool
	Alpha                   float64 // RMSprop
	Centered                bool    // RMSprop
	LRDecay                 float64 // Adagrad
	InitialAccumulatorValue float64 // Adagrad
}

func (o OptimizerOptions) native() core.OptimizerOptions {
	kind := o.Kind
	if kind == 0 {
		kind = AdamW
	}
	n := core.NewOptimizerOptions(core.Accel_optimizer_kind(kind))
	setIf(o.LR, n.SetLr)
	if o.WeightDecay != nil {
		n.SetWeight_decay(*o.WeightDecay)
	}
	setIf(o.Momentum, n.SetMomentum)
	setIf(o.Dampening, n.SetDampening)
	n.SetNesterov(boolInt(o.Nesterov))
	setIf(o.Betas[0], n.SetBeta1)
	setIf(o.Betas[1], n.SetBeta2)
	setIf(o.Eps, n.SetEps)
	n.SetAmsgrad(boolInt(o.AMSGrad))
	setIf(o.Alpha, n.SetAlpha)
	n.SetCentered(boolInt(o.Centered))
	setIf(o.LRDecay, n.SetLr_decay)
	setIf(o.InitialAccumulatorValue, n.SetInitial_accumulator_value)
	return n
}

// setIf sets a native field when the Go value is not zero (zero = keep the default).
func setIf[T comparable](v T, set func(T)) {
	var zero T
	if v != zero {
		set(v)
	}
}

// Optimizer updates a model's parameters. It keeps its model alive.
type Optimizer struct {
	optimizerHandle
	model       *Model
	accelerator *Accelerator // once prepared
}

// NewOptimizer makes an optimizer over model's parameters.
func NewOptimizer(model *Model, options OptimizerOptions) (*Optimizer, error) {
	mh, err := model.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(model)
	opts := options.native()
	defer core.DeleteOptimizerOptions(opts)
	h, err := call(func() core.Optimizer { return core.NewOptimizer(mh, opts) })
	if err != nil {
		return nil, err
	}
	return own(&Optimizer{model: model}, h), nil
}

type optimizerHandle = owned[core.Optimizer]

var optimizerKind = handleKind[core.Optimizer]{name: "Optimizer", free: core.DeleteOptimizer}

func (o *Optimizer) handle() (core.Optimizer, error) { return live(o, &optimizerKind) }

// Close frees the optimizer now; closing twice is fine.
func (o *Optimizer) Close() error {
	if o != nil {
		o.model, o.accelerator = nil, nil
	}
	return release(o, &optimizerKind)
}

func (o *Optimizer) do(f func(core.Optimizer)) error { return run(o, o.handle, f) }

// Step updates the parameters (skipped inside an accumulation window, or on fp16 overflow).
func (o *Optimizer) Step() error { return o.do(func(h core.Optimizer) { h.Step() }) }

// ZeroGrad clears the gradients.
func (o *Optimizer) ZeroGrad() error { return o.do(func(h core.Optimizer) { h.Zero_grad() }) }

// SetLR sets the learning rate of every parameter group.
func (o *Optimizer) SetLR(lr float64) error { return o.do(func(h core.Optimizer) { h.Set_lr(lr) }) }

// LR is the current learning rate.
func (o *Optimizer) LR() (float64, error) {
	var lr float64
	err := o.do(func(h core.Optimizer) { lr = h.Get_lr() })
	return lr, err
}

// StepWasSkipped tells whether the last Step did not update (accumulation or fp16 overflow).
func (o *Optimizer) StepWasSkipped() (bool, error) {
	var v bool
	err := o.do(func(h core.Optimizer) { v = h.Step_was_skipped() })
	return v, err
}

// SchedulerKind selects the learning-rate schedule.
type SchedulerKind int

const (
	StepLR            SchedulerKind = 1  // StepSize, Gamma
	MultiStepLR       SchedulerKind = 2  // Milestones, Gamma
	ExponentialLR     SchedulerKind = 3  // Gamma
	CosineAnnealingLR SchedulerKind = 4  // TMax, EtaMin
	LinearLR          SchedulerKind = 5  // StartFactor, EndFactor, TotalIters
	ConstantLR        SchedulerKind = 6  // Factor, TotalIters
	PolynomialLR      SchedulerKind = 7  // TotalIters, Power
	OneCycleLR        SchedulerKind = 8  // MaxLR, TotalSteps, PctStart, AnnealStrategy, DivFactor, FinalDivFactor, ThreePhase
	LinearWarmup      SchedulerKind = 9  // NumWarmupSteps, NumTrainingSteps
	CosineWarmup      SchedulerKind = 10 // NumWarmupSteps, NumTrainingSteps, NumCycles
	ReduceLROnPlateau SchedulerKind = 11 // Mode, Factor, Patience, Threshold, ThresholdMode, Cooldown, MinLR, Eps
)

// SchedulerOptions use PyTorch's names. A zero field (nil pointer, "" string)
// takes PyTorch's default for the kind.
type SchedulerOptions struct {
	Kind              SchedulerKind
	StepSize          int64
	Gamma             float64
	Milestones        []int64
	TMax              int64
	EtaMin            float64
	StartFactor       float64
	EndFactor         *float64
	TotalIters        int64
	Factor            float64
	Power             float64
	MaxLR             float64
	TotalSteps        int64
	PctStart          float64
	AnnealStrategy    string // "cos" (default) or "linear"
	DivFactor         float64
	FinalDivFactor    float64
	ThreePhase        bool
	NumWarmupSteps    int64
	NumTrainingSteps  int64
	NumCycles         float64
	Mode              string // "min" (default) or "max"
	Patience          *int64
	Threshold         float64
	ThresholdMode     string // "rel" (default) or "abs"
	Cooldown          int64
	MinLR             float64
	Eps               float64
	StepWithOptimizer *bool // nil: true (see Accelerator.PrepareScheduler)
}

func choice(value, what string, names ...string) (int, error) {
	if value == "" {
		return 0, nil
	}
	for i, n := range names {
		if value == n {
			return i, nil
		}
	}
	return 0, &Error{Code: ErrInvalidArgument, Msg: what + " \"" + value + "\" is not one of " + joinQuoted(names)}
}

func joinQuoted(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += "\"" + n + "\""
	}
	return s
}

func (o SchedulerOptions) native() (core.SchedulerOptions, error) {
	anneal, err := choice(o.AnnealStrategy, "AnnealStrategy", "cos", "linear")
	if err != nil {
		return nil, err
	}
	mode, err := choice(o.Mode, "Mode", "min", "max")
	if err != nil {
		return nil, err
	}
	thresholdMode, err := choice(o.ThresholdMode, "ThresholdMode", "rel", "abs")
	if err != nil {
		return nil, err
	}
	n := core.NewSchedulerOptions(core.Accel_scheduler_kind(o.Kind))
	setIf(o.StepSize, n.SetStep_size)
	setIf(o.Gamma, n.SetGamma)
	setIf(o.TMax, n.SetT_max)
	setIf(o.EtaMin, n.SetEta_min)
	setIf(o.StartFactor, n.SetStart_factor)
	if o.EndFactor != nil {
		n.SetEnd_factor(*o.EndFactor)
	}
	setIf(o.TotalIters, n.SetTotal_iters)
	setIf(o.Factor, n.SetFactor)
	setIf(o.Power, n.SetPower)
	setIf(o.MaxLR, n.SetMax_lr)
	setIf(o.TotalSteps, n.SetTotal_steps)
	setIf(o.PctStart, n.SetPct_start)
	n.SetAnneal_linear(anneal)
	setIf(o.DivFactor, n.SetDiv_factor)
	setIf(o.FinalDivFactor, n.SetFinal_div_factor)
	n.SetThree_phase(boolInt(o.ThreePhase))
	setIf(o.NumWarmupSteps, n.SetNum_warmup_steps)
	setIf(o.NumTrainingSteps, n.SetNum_training_steps)
	setIf(o.NumCycles, n.SetNum_cycles)
	n.SetMode_max(mode)
	if o.Patience != nil {
		n.SetPatience(*o.Patience)
	}
	setIf(o.Threshold, n.SetThreshold)
	n.SetThreshold_abs(thresholdMode)
	setIf(o.Cooldown, n.SetCooldown)
	setIf(o.MinLR, n.SetMin_lr)
	setIf(o.Eps, n.SetEps)
	if o.StepWithOptimizer != nil {
		n.SetStep_with_optimizer(boolInt(*o.StepWithOptimizer))
	}
	return n, nil
}

// Scheduler changes an optimizer's learning rate each step. It keeps its optimizer alive.
type Scheduler struct {
	schedulerHandle
	optimizer   *Optimizer
	accelerator *Accelerator // once prepared
}

// NewScheduler makes a schedule for optimizer.
func NewScheduler(optimizer *Optimizer, options SchedulerOptions) (*Scheduler, error) {
	oh, err := optimizer.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(optimizer)
	opts, err := options.native()
	if err != nil {
		return nil, err
	}
	defer core.DeleteSchedulerOptions(opts)
	milestones := newInt64Vector(options.Milestones)
	defer core.DeleteInt64Vector(milestones)
	h, err := call(func() core.Scheduler { return core.NewScheduler(oh, opts, milestones) })
	if err != nil {
		return nil, err
	}
	return own(&Scheduler{optimizer: optimizer}, h), nil
}

type schedulerHandle = owned[core.Scheduler]

var schedulerKind = handleKind[core.Scheduler]{name: "Scheduler", free: core.DeleteScheduler}

func (s *Scheduler) handle() (core.Scheduler, error) { return live(s, &schedulerKind) }

// Close frees the scheduler now; closing twice is fine.
func (s *Scheduler) Close() error {
	if s != nil {
		s.optimizer, s.accelerator = nil, nil
	}
	return release(s, &schedulerKind)
}

func (s *Scheduler) do(f func(core.Scheduler)) error { return run(s, s.handle, f) }

// Step advances the schedule by one step.
func (s *Scheduler) Step() error { return s.do(func(h core.Scheduler) { h.Step() }) }

// StepMetric advances ReduceLROnPlateau with the monitored metric.
func (s *Scheduler) StepMetric(metric float64) error {
	return s.do(func(h core.Scheduler) { h.Step_metric(metric) })
}

// LastLR is the learning rate the last step set.
func (s *Scheduler) LastLR() (float64, error) {
	var v float64
	err := s.do(func(h core.Scheduler) { v = h.Get_last_lr() })
	return v, err
}

// LastEpoch counts the steps taken.
func (s *Scheduler) LastEpoch() (int64, error) {
	var v int64
	err := s.do(func(h core.Scheduler) { v = h.Last_epoch() })
	return v, err
}
