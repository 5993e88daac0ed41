package accel

import (
	"runtime"
	"sort"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// SaveState writes a checkpoint (models, optimizers, schedulers, loaders, RNG
// states, registered objects) to dir; "" with AutomaticCheckpointNaming picks
// project_dir/checkpoints/checkpoint_<i>, and an existing one is an
// ErrInvalidArgument error naming it (Accelerate's ValueError). Returns the
// directory written. Collective.
func (a *Accelerator) SaveState(dir string) (string, error) {
	return accelValue(a, func(h core.Accelerator) string { return h.Save_state(dir) })
}

// SaveStateWith is SaveState with Accelerate's safe_serialization: false
// writes each model as pytorch_model.bin (a torch.save pickle of its state
// dict, data only) instead of model.safetensors, the layout Accelerate 0.22's
// load_state reads. LoadState reads either. Collective.
func (a *Accelerator) SaveStateWith(dir string, safeSerialization bool) (string, error) {
	return accelValue(a, func(h core.Accelerator) string { return h.Save_state(dir, safeSerialization) })
}

// LoadState restores what SaveState wrote ("": the latest automatic checkpoint). Collective.
func (a *Accelerator) LoadState(dir string) error {
	return a.do(func(h core.Accelerator) { h.Load_state(dir) })
}

// SaveIteration is the number of the next automatic checkpoint.
func (a *Accelerator) SaveIteration() (int64, error) {
	return accelValue(a, func(h core.Accelerator) int64 { return h.Save_iteration() })
}

// SetSaveIteration sets the number of the next automatic checkpoint
// (Accelerate's project_configuration.iteration = n); n < 0 is ErrInvalidArgument.
func (a *Accelerator) SetSaveIteration(n int64) error {
	return a.do(func(h core.Accelerator) { h.Set_save_iteration(n) })
}

// SaveModel writes the model's weights as safetensors shards of at most
// maxShardSize ("10GB", "500MB") to dir, on the main process.
func (a *Accelerator) SaveModel(m *Model, dir, maxShardSize string) error {
	if maxShardSize == "" {
		maxShardSize = "10GB"
	}
	return a.withModel(m, func(h core.Accelerator, mh core.Model) { h.Save_model(mh, dir, maxShardSize) })
}

// SaveTensors is Accelerate's accelerator.save for named tensors: one
// safetensors file at path, written by the main process (tensors in name order).
func (a *Accelerator) SaveTensors(tensors map[string]*Tensor, path string) error {
	names := make([]string, 0, len(tensors))
	for name := range tensors {
		names = append(names, name)
	}
	sort.Strings(names)
	named := core.NewNamedTensors()
	defer core.DeleteNamedTensors(named)
	for _, name := range names {
		h, err := tensors[name].handle()
		if err != nil {
			return err
		}
		named.Add(name, h)
	}
	defer runtime.KeepAlive(tensors)
	return a.do(func(h core.Accelerator) { h.Save_tensors(named, path) })
}

// LoadCheckpointInModel loads weights from a file or SaveModel directory and
// returns how many model tensors the file lacked and file tensors the model lacked
// (with strict, either is an error).
func (a *Accelerator) LoadCheckpointInModel(m *Model, path string, strict bool) (missing, unexpected int64, err error) {
	var v core.Int64Vector
	err = a.withModel(m, func(h core.Accelerator, mh core.Model) { v = h.Load_checkpoint_in_model(mh, path, strict) })
	if err != nil {
		return 0, 0, err
	}
	counts := takeInt64Vector(v)
	return counts[0], counts[1], nil
}

// Stateful is a Go object saved with every checkpoint (RegisterForCheckpointing):
// StateDict's bytes come back to LoadStateDict on LoadState.
type Stateful interface {
	StateDict() ([]byte, error)
	LoadStateDict(state []byte) error
}

// checkpointObject is the CheckpointObject director over a Stateful; the
// accelerator owns it once registered and deletes it when freed.
type checkpointObject struct{ obj Stateful }

func (c *checkpointObject) Save_state(out core.StateWriter) (message string) {
	defer func() {
		if r := recover(); r != nil {
			message = panicText(r)
		}
	}()
	state, err := c.obj.StateDict()
	if err == nil {
		err = withThread(func() { out.Write(state) })
	}
	return callbackResult(err)
}

func (c *checkpointObject) Load_state(data string, size int64) (message string) {
	defer func() {
		if r := recover(); r != nil {
			message = panicText(r)
		}
	}()
	return callbackResult(c.obj.LoadStateDict([]byte(data)))
}

// RegisterForCheckpointing adds objects whose state SaveState saves and LoadState restores, in order.
func (a *Accelerator) RegisterForCheckpointing(objects ...Stateful) error {
	for _, obj := range objects {
		if obj == nil {
			return &Error{Code: ErrInvalidArgument, Msg: "RegisterForCheckpointing: object is nil"}
		}
		director := core.NewDirectorCheckpointObject(&checkpointObject{obj})
		if err := a.do(func(h core.Accelerator) { h.Register_for_checkpointing(director) }); err != nil {
			core.DeleteDirectorCheckpointObject(director) // not handed over
			return err
		}
	}
	return nil
}

// stateHook is the StateHook director over a Go function (owned by the accelerator once registered).
type stateHook struct{ fn func(dir string) error }

func (s *stateHook) Run(dir string) (message string) {
	defer func() {
		if r := recover(); r != nil {
			message = panicText(r)
		}
	}()
	return callbackResult(s.fn(dir))
}

// HookHandle unregisters a hook.
type HookHandle struct {
	accelerator *Accelerator
	id          int64
}

// Remove unregisters the hook.
func (h *HookHandle) Remove() error {
	return h.accelerator.do(func(c core.Accelerator) { c.Remove_hook(h.id) })
}

func (a *Accelerator) registerHook(fn func(dir string) error, register func(core.Accelerator, core.StateHook) int64) (*HookHandle, error) {
	if fn == nil {
		return nil, &Error{Code: ErrInvalidArgument, Msg: "the hook function is nil"}
	}
	director := core.NewDirectorStateHook(&stateHook{fn})
	var id int64
	if err := a.do(func(h core.Accelerator) { id = register(h, director) }); err != nil {
		core.DeleteDirectorStateHook(director)
		return nil, err
	}
	return &HookHandle{accelerator: a, id: id}, nil
}

// RegisterSaveStatePreHook runs fn(dir) before SaveState writes; its error fails SaveState.
func (a *Accelerator) RegisterSaveStatePreHook(fn func(dir string) error) (*HookHandle, error) {
	return a.registerHook(fn, func(h core.Accelerator, s core.StateHook) int64 { return h.Register_save_state_pre_hook(s) })
}

// RegisterSaveStateModelsHook is Accelerate's register_save_state_pre_hook:
// fn(models, weights, dir) runs before SaveState writes, with the prepared
// models and their state dicts (GetStateDict's, closed after fn returns;
// editing them does not change what SaveState writes). Its error fails SaveState.
func (a *Accelerator) RegisterSaveStateModelsHook(fn func(models []*Model, weights [][]NamedTensor, dir string) error) (*HookHandle, error) {
	return a.RegisterSaveStatePreHook(func(dir string) error {
		models := append([]*Model(nil), a.preparedModels...)
		weights := make([][]NamedTensor, 0, len(models))
		defer func() {
			for _, dict := range weights {
				for _, entry := range dict {
					entry.Tensor.Close()
				}
			}
		}()
		for _, m := range models {
			dict, err := a.GetStateDict(m)
			if err != nil {
				return err
			}
			weights = append(weights, dict)
		}
		return fn(models, weights, dir)
	})
}

// RegisterLoadStateModelsHook is Accelerate's register_load_state_pre_hook:
// fn(models, dir) runs before LoadState reads, with the prepared models.
func (a *Accelerator) RegisterLoadStateModelsHook(fn func(models []*Model, dir string) error) (*HookHandle, error) {
	return a.RegisterLoadStatePreHook(func(dir string) error {
		return fn(append([]*Model(nil), a.preparedModels...), dir)
	})
}

// RegisterLoadStatePreHook runs fn(dir) before LoadState reads; its error fails LoadState.
func (a *Accelerator) RegisterLoadStatePreHook(fn func(dir string) error) (*HookHandle, error) {
	return a.registerHook(fn, func(h core.Accelerator, s core.StateHook) int64 { return h.Register_load_state_pre_hook(s) })
}
