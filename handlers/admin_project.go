package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"petstore/buildinfo"
	"petstore/store"
)

// projectView is the admin API's Project: the settings plus the address
// they give.
type projectView struct {
	store.Project
	DefaultAddress string `json:"defaultAddress"`
	// CNAMETarget is empty without --domain or --cname-target: the
	// dashboard then names the flag instead of offering a useless form.
	CNAMETarget string `json:"cnameTarget"`
	// Development: cnameTarget is a placeholder (domains.DevelopmentTarget).
	Development bool `json:"development"`
}

func (s *Server) projectView(p store.Project) projectView {
	if p.Deploys == nil {
		p.Deploys = []store.Deploy{}
	}
	return projectView{Project: p, DefaultAddress: s.domains.DefaultAddress(p), CNAMETarget: s.domains.CNAMETarget(), Development: s.cfg.Development}
}

func (s *Server) getProject(c echo.Context) error {
	p, err := s.store.Project(c.Request().Context())
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, s.projectView(p))
}

// projectPatch is the ProjectPatch schema: absent fields stay as they are.
type projectPatch struct {
	Name *string `json:"name"`
	Slug *string `json:"slug"`
	Plan *string `json:"plan"`
}

func (s *Server) updateProject(c echo.Context) error {
	var in projectPatch
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	// Through the manager: routing follows the slug.
	p, err := s.domains.UpdateProject(c.Request().Context(), func(p *store.Project) error {
		if in.Name != nil {
			if p.Name = strings.TrimSpace(*in.Name); p.Name == "" {
				return store.Errorf(store.EINVALID, "body.name: must not be blank")
			}
		}
		given(&p.Slug, in.Slug)
		given(&p.Plan, in.Plan)
		return nil
	})
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, s.projectView(p))
}

// RecordDeploy records that this binary and spec are deployed: a restart
// of the same build and spec is no new deploy.
func (s *Server) RecordDeploy(ctx context.Context) error {
	sum := sha256.Sum256(s.public.yaml)
	hexSum := hex.EncodeToString(sum[:])
	p, err := s.store.Project(ctx)
	if err != nil {
		return err
	}
	if len(p.Deploys) > 0 && p.Deploys[0].SpecSHA256 == hexSum && buildinfo.Build(p.Deploys[0].Build).Same(buildinfo.Running) {
		return nil
	}
	_, err = s.store.RecordDeploy(ctx, store.Deploy{
		Version: s.public.doc.Info.Version, SpecSHA256: hexSum, Status: store.DeploySucceeded, Build: store.DeployBuild(buildinfo.Running),
	})
	return err
}
