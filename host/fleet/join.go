package fleet

import "context"

// Join dials the fleet at url (Connect) and sets its streams up (Setup):
// what a fleet member does before anything of its own starts, so that a
// URL that does not answer, refused credentials or an incompatible stream
// stop it there. leave drains the connection. The errors are the user's
// text.
func Join(ctx context.Context, url, name string, auth Auth, o Options) (st *Stores, leave func(), err error) {
	nc, js, err := Connect(ctx, url, name, auth)
	if err != nil {
		return nil, nil, err
	}
	st, err = Setup(ctx, js, o)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return st, func() { _ = nc.Drain() }, nil
}
