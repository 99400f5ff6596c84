package config

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/knadh/koanf/maps"
	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	gotoml "github.com/pelletier/go-toml/v2"
)

// Sources are the inputs to [Load]. The zero value loads the defaults only.
type Sources struct {
	// Env looks up environment variables; Load calls it only for the
	// allow-listed AVENOR_* names, and only when Environ is nil.
	Env func(string) string
	// Environ is the environment as os.Environ returns it. When non-nil it is
	// used instead of Env. Nil Env and Environ mean an empty environment: Load
	// never reads the process environment itself.
	Environ []string
	// Dirs locates the user file, Dirs.UserConfigFile(); with Dirs.Config
	// empty there is no user layer.
	Dirs Dirs
	// ProjectDir is the project (see [FindProject]); its .avenor/config.toml
	// is the project layer. "" means no project.
	ProjectDir string
	// Flags holds only the flags the user set explicitly, keyed by setting key
	// ("max_retries", not "--max-retries"). Values may be typed (string,
	// time.Duration, int, bool) or strings to parse. Any key outside [Keys],
	// and "backends", is an error.
	Flags map[string]any
	// Logger gets, at debug level, each config file Load reads or looks for
	// and does not find (AVENOR_LOG=debug); nil logs nothing.
	Logger hclog.Logger
}

// Load layers defaults < user file < project file < environment < flags into
// one Settings, and says which layer set each key. A missing file is not an
// error; a malformed one, an unknown key or a bad value is, naming the file or
// variable, the key and the problem. Every problem found in any layer is
// reported (joined), each as an [*Error].
func Load(src Sources) (Settings, Provenance, error) {
	l := loader{k: koanf.New("."), prov: Provenance{}, log: src.Logger}
	if l.log == nil {
		l.log = hclog.NewNullLogger()
	}

	defaults := make(map[string]any, len(keySpecs))
	for _, s := range keySpecs {
		if s.kind != kindBackends {
			defaults[s.key] = s.def
		}
	}
	l.merge(LayerDefault, defaults)

	if src.Dirs.Config != "" {
		l.loadFile(LayerUser, src.Dirs.UserConfigFile())
	}
	if src.ProjectDir != "" {
		l.loadFile(LayerProject, ProjectConfigFile(src.ProjectDir))
	} else {
		l.log.Debug("no project: no " + ProjectMarker + "/ directory from the run's directory upwards")
	}
	l.loadEnv(src.Env, src.Environ)
	l.loadFlags(src.Flags)

	if len(l.errs) > 0 {
		return Settings{}, nil, errors.Join(l.errs...)
	}
	var s Settings
	if err := l.k.UnmarshalWithConf("", &s, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		// Every value was checked on the way in, so this is avenor's bug.
		return Settings{}, nil, fmt.Errorf("config: decoding merged settings: %w", err)
	}
	return s, l.prov, nil
}

type loader struct {
	k    *koanf.Koanf
	prov Provenance
	errs []error
	log  hclog.Logger
}

// merge adds one layer's checked values over the layers below it.
func (l *loader) merge(layer Layer, m map[string]any) {
	if len(m) == 0 {
		return
	}
	// confmap only reads a map, so Load cannot fail.
	if err := l.k.Load(confmap.Provider(m, ""), nil); err != nil {
		l.errs = append(l.errs, fmt.Errorf("config: merging %s layer: %w", layer, err))
		return
	}
	flat, _ := maps.Flatten(m, nil, ".")
	for key := range flat {
		l.prov[key] = layer
	}
}

func (l *loader) fail(layer Layer, path string, errs ...fieldErr) {
	for _, fe := range errs {
		l.errs = append(l.errs, &Error{Layer: layer, Path: path, Key: fe.key, Err: fe.err})
	}
}

// loadFile reads one TOML file; a file that does not exist adds nothing. A
// file with any bad key adds nothing either, so that a half-read file never
// feeds the settings.
func (l *loader) loadFile(layer Layer, path string) {
	b, err := file.Provider(path).ReadBytes()
	if errors.Is(err, fs.ErrNotExist) {
		l.log.Debug("config file absent", "layer", layer, "path", path)
		return
	}
	if err != nil {
		l.errs = append(l.errs, &Error{Layer: layer, Path: path, Err: err})
		return
	}
	l.log.Debug("config file read", "layer", layer, "path", path)
	raw, err := toml.Parser().Unmarshal(b)
	if err != nil {
		l.errs = append(l.errs, &Error{Layer: layer, Path: path, Err: malformed(err)})
		return
	}

	var errs []fieldErr
	m := make(map[string]any, len(raw))
	for _, key := range sortedKeys(raw) {
		spec, ok := lookupSpec(key)
		if !ok {
			errs = append(errs, fieldErr{key, unknownKey(key, knownKeys())})
			continue
		}
		if spec.kind == kindBackends {
			backends, ferrs := parseBackends(raw[key])
			errs = append(errs, ferrs...)
			m[key] = backends
			continue
		}
		v, err := parseValue(spec.kind, raw[key])
		if err != nil {
			errs = append(errs, fieldErr{key, err})
			continue
		}
		m[key] = v
	}
	if len(errs) > 0 {
		l.fail(layer, path, errs...)
		return
	}
	l.merge(layer, m)
}

func malformed(err error) error {
	var de *gotoml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return &detailError{
			msg:  fmt.Sprintf("%s at line %d, column %d: %s", ErrMalformedFile, row, col, strings.TrimPrefix(de.Error(), "toml: ")),
			kind: ErrMalformedFile,
		}
	}
	return &detailError{msg: fmt.Sprintf("%s: %s", ErrMalformedFile, strings.TrimPrefix(err.Error(), "toml: ")), kind: ErrMalformedFile}
}

// loadEnv reads the allow-listed AVENOR_* variables. Other AVENOR_*
// variables (AVENOR_PLUGIN_PATH, AVENOR_OPENCODE_URL, ...) belong to other
// parts of avenor and are left alone. A variable set to "" counts as unset.
func (l *loader) loadEnv(lookup func(string) string, environ []string) {
	allowed := make(map[string]keySpec, len(keySpecs))
	for _, s := range keySpecs {
		if s.kind != kindBackends {
			allowed[envName(s.key)] = s
		}
	}
	if environ == nil && lookup != nil {
		for _, s := range keySpecs {
			if s.kind == kindBackends {
				continue
			}
			if v := lookup(envName(s.key)); v != "" {
				environ = append(environ, envName(s.key)+"="+v)
			}
		}
	}
	p := env.Provider("", env.Opt{
		Prefix:      "AVENOR_",
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, v string) (string, any) {
			if _, ok := allowed[name]; !ok || v == "" {
				return "", nil
			}
			return name, v
		},
	})
	vars, err := p.Read() // reads only the slice above, so cannot fail
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("config: reading environment: %w", err))
		return
	}

	var errs []fieldErr
	m := make(map[string]any, len(vars))
	for _, name := range sortedKeys(vars) {
		spec := allowed[name]
		v, err := parseValue(spec.kind, vars[name])
		if err != nil {
			errs = append(errs, fieldErr{name, err})
			continue
		}
		m[spec.key] = v
	}
	if len(errs) > 0 {
		l.fail(LayerEnv, "", errs...)
		return
	}
	l.merge(LayerEnv, m)
}

// loadFlags applies the flags the user set.
func (l *loader) loadFlags(flags map[string]any) {
	var errs []fieldErr
	m := make(map[string]any, len(flags))
	for _, key := range sortedKeys(flags) {
		spec, ok := lookupSpec(key)
		if !ok || spec.kind == kindBackends {
			why := fmt.Sprintf("no setting is named %q", key)
			if ok {
				why = key + " can only be set in a config file"
			}
			errs = append(errs, fieldErr{flagName(key), &detailError{
				msg:  fmt.Sprintf("%s: %s", ErrUnknownKey, why),
				kind: ErrUnknownKey,
			}})
			continue
		}
		v, err := parseValue(spec.kind, flags[key])
		if err != nil {
			errs = append(errs, fieldErr{flagName(key), err})
			continue
		}
		m[key] = v
	}
	if len(errs) > 0 {
		l.fail(LayerFlag, "", errs...)
		return
	}
	l.merge(LayerFlag, m)
}
