// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - protection domains.
 */

#include "sroce.h"

int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_pd *pd = to_spd(ibpd);
	struct sroce_alloc_pd_resp resp = {};
	int id, err;

	/* The ID range is what enforces max_pd. */
	id = ida_alloc_range(&sdev->pd_ida, 1,
			     sroce_max_for(SROCE_MAX_PD, udata), GFP_KERNEL);
	if (id < 0)
		return id == -ENOSPC ? -ENOMEM : id;
	pd->pdn = id;

	if (udata && udata->outlen) {
		resp.pdn = pd->pdn;
		err = ib_copy_to_udata(udata, &resp,
				       min_t(size_t, sizeof(resp),
					     udata->outlen));
		if (err) {
			ida_free(&sdev->pd_ida, pd->pdn);
			return err;
		}
	}

	return 0;
}

int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_pd *pd = to_spd(ibpd);

	ida_free(&to_sdev(ibpd->device)->pd_ida, pd->pdn);
	return 0;
}
