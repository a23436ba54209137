package engine

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

func (e *Engine) createConnection(ctx context.Context, s *sqlast.CreateConnection) (*core.Result, error) {
	var existing catalog.ConnectionSpec
	ok, err := e.Cat.Get(ctx, catalog.KindConnection, core.GlobalSchema, s.Name, &existing)
	if err != nil {
		return nil, err
	}
	if ok {
		if s.IfNotExists {
			return core.Message("storage connection %s already exists", s.Name), nil
		}
		return nil, fmt.Errorf("storage connection %s already exists (use IF NOT EXISTS, or DROP STORAGE CONNECTION first)", s.Name)
	}
	spec := catalog.ConnectionSpec{Type: s.Kind, CreatedAt: time.Now().UTC()}
	if s.Comment != nil {
		spec.Comment = *s.Comment
	}
	var secret string
	for _, p := range s.Props {
		switch strings.ToLower(p.Key) {
		case "endpoint":
			spec.Endpoint = p.Value
		case "region":
			spec.Region = p.Value
		case "access_id", "access_key_id", "accessid":
			spec.AccessID = p.Value
		case "access_key", "secret_key", "access_key_secret", "secret_access_key", "accesskey":
			secret = p.Value
		case "comment":
			spec.Comment = p.Value
		case "role_arn", "rolearn":
			spec.RoleARN = strings.TrimSpace(p.Value)
		case "external_id":
			spec.ExternalID = p.Value
		case "sts_endpoint":
			spec.STSEndpoint = strings.TrimSpace(p.Value)
		default:
			return nil, fmt.Errorf("storage connection %s: unknown property %s (known: ENDPOINT, ACCESS_ID, ACCESS_KEY, REGION, ROLE_ARN, EXTERNAL_ID, STS_ENDPOINT)", s.Name, strings.ToUpper(p.Key))
		}
	}
	if err := checkRoleARN(s.Kind, spec); err != nil {
		return nil, fmt.Errorf("storage connection %s: %w", s.Name, err)
	}
	switch s.Kind {
	case "OSS", "COS", "S3":
	default:
		return nil, fmt.Errorf("storage connection %s: TYPE %s is not one of OSS, COS, S3", s.Name, s.Kind)
	}
	if spec.Endpoint == "" {
		return nil, fmt.Errorf("storage connection %s: ENDPOINT = '…' is required", s.Name)
	}
	if spec.AccessID == "" || secret == "" {
		return nil, fmt.Errorf("storage connection %s: ACCESS_ID = '…' and ACCESS_KEY = '…' are required", s.Name)
	}
	if err := e.Cat.Put(ctx, catalog.KindConnection, core.GlobalSchema, s.Name, spec, secret); err != nil {
		return nil, err
	}
	return core.Message("storage connection %s created", s.Name), nil
}

func (e *Engine) dropConnection(ctx context.Context, s *sqlast.DropConnection) (*core.Result, error) {
	var spec catalog.ConnectionSpec
	ok, err := e.Cat.Get(ctx, catalog.KindConnection, core.GlobalSchema, s.Name, &spec)
	if err != nil {
		return nil, err
	}
	if !ok {
		if s.IfExists {
			return core.Message("storage connection %s does not exist", s.Name), nil
		}
		return nil, fmt.Errorf("storage connection %s does not exist", s.Name)
	}
	vols, err := e.Cat.ListAll(ctx, catalog.KindVolume)
	if err != nil {
		return nil, err
	}
	for _, v := range vols {
		var vs catalog.VolumeSpec
		if v.Decode(&vs) == nil && vs.Connection == s.Name {
			return nil, fmt.Errorf("storage connection %s is used by volume %s: drop the volume first", s.Name, core.Display(v.Schema, v.Name))
		}
	}
	if err := e.Cat.Delete(ctx, catalog.KindConnection, core.GlobalSchema, s.Name); err != nil {
		return nil, err
	}
	return core.Message("storage connection %s dropped", s.Name), nil
}

// maskID shows enough of an access id to recognise it.
func maskID(id string) string {
	if len(id) <= 4 {
		return "****"
	}
	return id[:4] + strings.Repeat("*", 4)
}

func (e *Engine) showConnections(ctx context.Context, s *sqlast.ShowConnections) (*core.Result, error) {
	objs, err := e.Cat.List(ctx, catalog.KindConnection, core.GlobalSchema)
	if err != nil {
		return nil, err
	}
	res := &core.Result{Columns: []string{"name", "type", "endpoint", "region", "access_id", "comment", "created_time"}}
	for _, o := range objs {
		if !core.LikeMatch(s.Like, o.Name) {
			continue
		}
		var c catalog.ConnectionSpec
		if err := o.Decode(&c); err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, []any{o.Name, c.Type, c.Endpoint, c.Region, maskID(c.AccessID), c.Comment, c.CreatedAt})
	}
	return res, nil
}

func (e *Engine) descConnection(ctx context.Context, s *sqlast.DescConnection) (*core.Result, error) {
	var c catalog.ConnectionSpec
	ok, err := e.Cat.Get(ctx, catalog.KindConnection, core.GlobalSchema, s.Name, &c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("storage connection %s does not exist", s.Name)
	}
	return core.PropertyRows([][2]any{
		{"name", s.Name}, {"type", c.Type}, {"endpoint", c.Endpoint}, {"region", c.Region},
		{"access_id", maskID(c.AccessID)}, {"access_key", "********"}, {"role_arn", c.RoleARN}, {"sts_endpoint", c.STSEndpoint},
		{"comment", c.Comment}, {"created_time", c.CreatedAt},
	}), nil
}

// checkRoleARN accepts ROLE_ARN where lakepipe can assume it: AWS STS's
// AssumeRole (S3, or any S3 store whose STS speaks that API, named by
// STS_ENDPOINT). Alibaba Cloud's and Tencent Cloud's STS sign their calls
// another way, which the S3 client here does not speak.
func checkRoleARN(kind string, c catalog.ConnectionSpec) error {
	if c.RoleARN == "" {
		if c.STSEndpoint != "" || c.ExternalID != "" {
			return fmt.Errorf("STS_ENDPOINT and EXTERNAL_ID go with ROLE_ARN")
		}
		return nil
	}
	if kind != "S3" {
		return fmt.Errorf("ROLE_ARN on a %s connection: lakepipe assumes roles through AWS STS's AssumeRole, which %s's STS does not speak; use the RAM user's ACCESS_ID and ACCESS_KEY", kind, kind)
	}
	if !strings.HasPrefix(c.RoleARN, "arn:") || strings.Count(c.RoleARN, ":") < 5 {
		return fmt.Errorf("ROLE_ARN %q: expected an ARN such as arn:aws:iam::123456789012:role/lakepipe-reader", c.RoleARN)
	}
	if c.STSEndpoint != "" {
		u, err := url.Parse(c.STSEndpoint)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("STS_ENDPOINT %q: expected https://host[:port]", c.STSEndpoint)
		}
	}
	return nil
}

func (e *Engine) createVolume(ctx context.Context, s *sqlast.CreateVolume) (*core.Result, error) {
	schema := e.Cfg.Schema
	var existing catalog.VolumeSpec
	ok, err := e.Cat.Get(ctx, catalog.KindVolume, schema, s.Name, &existing)
	if err != nil {
		return nil, err
	}
	if ok {
		if s.IfNotExists {
			return core.Message("volume %s already exists", s.Name), nil
		}
		return nil, fmt.Errorf("volume %s already exists (use IF NOT EXISTS, or DROP VOLUME first)", s.Name)
	}
	loc, err := objstore.ParseLocation(s.Location)
	if err != nil {
		return nil, fmt.Errorf("volume %s: %w", s.Name, err)
	}
	spec := catalog.VolumeSpec{
		Location: loc.String(), Connection: s.Connection, DirectoryEnable: s.DirectoryEnable,
		AutoRefresh: s.AutoRefresh, Recursive: s.Recursive, CreatedAt: time.Now().UTC(),
	}
	if s.Comment != nil {
		spec.Comment = *s.Comment
	}
	vol, err := e.OpenVolume(ctx, s.Name, spec)
	if err != nil {
		return nil, err
	}
	// Reach the store now: a wrong endpoint, bucket or key is reported by
	// the statement that introduced it, not by the first load.
	if err := vol.Check(ctx); err != nil {
		return nil, fmt.Errorf("volume %s: %w", s.Name, err)
	}
	if spec.DirectoryEnable {
		if spec.RefreshID, err = e.RefreshDirectory(ctx, schema, s.Name, vol); err != nil {
			return nil, err
		}
		spec.RefreshedAt = time.Now().UTC()
	}
	if err := e.Cat.Put(ctx, catalog.KindVolume, schema, s.Name, spec, ""); err != nil {
		return nil, err
	}
	return core.Message("volume %s created", s.Name), nil
}

func (e *Engine) alterVolume(ctx context.Context, s *sqlast.AlterVolume) (*core.Result, error) {
	vol, spec, err := e.Volume(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	if !spec.DirectoryEnable {
		return nil, fmt.Errorf("volume %s has no directory to refresh: create it with DIRECTORY = (ENABLE = TRUE)", s.Name)
	}
	prev := spec.RefreshID
	if spec.RefreshID, err = e.RefreshDirectory(ctx, e.Cfg.Schema, s.Name, vol); err != nil {
		return nil, err
	}
	spec.RefreshedAt = time.Now().UTC()
	if err := e.Cat.Put(ctx, catalog.KindVolume, e.Cfg.Schema, s.Name, spec, ""); err != nil {
		return nil, err
	}
	if prev != 0 {
		// Old snapshots are garbage; the mutation runs in the background.
		_ = e.St.Exec(ctx, "ALTER TABLE lakepipe.directory DELETE WHERE volume = "+chsql.QuoteString(e.VolumeKey(e.Cfg.Schema, s.Name))+
			fmt.Sprintf(" AND refresh_id < %d", spec.RefreshID))
	}
	n, err := e.St.Strings(ctx, "SELECT count() FROM lakepipe.directory WHERE volume = "+chsql.QuoteString(e.VolumeKey(e.Cfg.Schema, s.Name))+
		fmt.Sprintf(" AND refresh_id = %d", spec.RefreshID))
	if err != nil {
		return nil, err
	}
	return core.Message("volume %s refreshed: %s files", s.Name, n[0]), nil
}

func (e *Engine) showVolumes(ctx context.Context, s *sqlast.ShowVolumes) (*core.Result, error) {
	objs, err := e.Cat.List(ctx, catalog.KindVolume, e.Cfg.Schema)
	if err != nil {
		return nil, err
	}
	res := &core.Result{Columns: []string{"name", "location", "connection", "directory_enabled", "auto_refresh", "recursive", "comment", "created_time"}}
	for _, o := range objs {
		if !core.LikeMatch(s.Like, o.Name) {
			continue
		}
		var v catalog.VolumeSpec
		if err := o.Decode(&v); err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, []any{o.Name, v.Location, v.Connection, v.DirectoryEnable, v.AutoRefresh, v.Recursive, v.Comment, v.CreatedAt})
	}
	return res, nil
}

func (e *Engine) descVolume(ctx context.Context, s *sqlast.DescVolume) (*core.Result, error) {
	var v catalog.VolumeSpec
	ok, err := e.Cat.Get(ctx, catalog.KindVolume, e.Cfg.Schema, s.Name, &v)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("volume %s does not exist", s.Name)
	}
	kv := [][2]any{
		{"name", s.Name}, {"schema", e.Cfg.Schema}, {"type", "EXTERNAL"}, {"location", v.Location}, {"connection", v.Connection},
		{"directory_enabled", v.DirectoryEnable}, {"auto_refresh", v.AutoRefresh}, {"recursive", v.Recursive},
		{"comment", v.Comment}, {"created_time", v.CreatedAt},
	}
	if !v.RefreshedAt.IsZero() {
		kv = append(kv, [2]any{"last_refresh_time", v.RefreshedAt})
	}
	return core.PropertyRows(kv), nil
}

func (e *Engine) dropVolume(ctx context.Context, s *sqlast.DropVolume) (*core.Result, error) {
	var v catalog.VolumeSpec
	ok, err := e.Cat.Get(ctx, catalog.KindVolume, e.Cfg.Schema, s.Name, &v)
	if err != nil {
		return nil, err
	}
	if !ok {
		if s.IfExists {
			return core.Message("volume %s does not exist", s.Name), nil
		}
		return nil, fmt.Errorf("volume %s does not exist", s.Name)
	}
	if err := e.Cat.Delete(ctx, catalog.KindVolume, e.Cfg.Schema, s.Name); err != nil {
		return nil, err
	}
	return core.Message("volume %s dropped (its files are kept)", s.Name), nil
}
