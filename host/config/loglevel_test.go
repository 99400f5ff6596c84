package config

import "testing"

func TestLogLevel(t *testing.T) {
	for _, tc := range []struct {
		name, flag       string
		env              map[string]string
		want             string
		flagWrong, isErr bool
	}{
		{name: "default", want: "warn"},
		{name: "flag wins", flag: "debug", env: map[string]string{LogEnv: "info", LogLevelEnv: "error"}, want: "debug"},
		{name: "AVENOR_LOG", env: map[string]string{LogEnv: "info", LogLevelEnv: "error"}, want: "info"},
		{name: "older name", env: map[string]string{LogLevelEnv: "error"}, want: "error"},
		{name: "upper case", flag: "DEBUG", want: "DEBUG"},
		{name: "bad flag", flag: "loud", flagWrong: true, isErr: true},
		{name: "bad AVENOR_LOG", env: map[string]string{LogEnv: "loud"}, isErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			level, flagWrong, err := LogLevel(tc.flag, func(k string) string { return tc.env[k] })
			if level != tc.want || flagWrong != tc.flagWrong || (err != nil) != tc.isErr {
				t.Errorf("LogLevel(%q) = %q, %v, %v; want %q, %v, error %v", tc.flag, level, flagWrong, err, tc.want, tc.flagWrong, tc.isErr)
			}
		})
	}
	if level, _, err := LogLevel("", nil); level != DefaultLogLevel || err != nil {
		t.Errorf("LogLevel with no environment = %q, %v", level, err)
	}
}
