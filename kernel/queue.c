// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - memory shared with user space: vmalloc_user() areas offered to the
 * process through ib_core's mmap entries.
 *
 * An area lives as long as its rdma_user_mmap_entry: the owning object
 * removes the entry when it is destroyed, and ib_core calls mmap_free once
 * no mmap() can find it any more. The area is freed there. Mappings that
 * still exist keep their pages (remap_vmalloc_range() takes a reference on
 * every page it maps), so a process that unmaps late only ever sees memory
 * nobody else uses.
 */

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "sroce.h"

/**
 * sroce_mmap_alloc - allocate a zeroed area user space can map
 * @ibuc: the user context the area belongs to
 * @size: bytes; rounded up to whole pages
 *
 * Return: the entry (vaddr is the kernel address), or an ERR_PTR().
 */
struct sroce_mmap_entry *sroce_mmap_alloc(struct ib_ucontext *ibuc,
					  size_t size)
{
	struct sroce_mmap_entry *entry;
	int err;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry)
		return ERR_PTR(-ENOMEM);

	entry->size = PAGE_ALIGN(size);
	entry->vaddr = vmalloc_user(entry->size);
	if (!entry->vaddr) {
		kfree(entry);
		return ERR_PTR(-ENOMEM);
	}

	err = rdma_user_mmap_entry_insert(ibuc, &entry->rdma, entry->size);
	if (err) {
		vfree(entry->vaddr);
		kfree(entry);
		return ERR_PTR(err);
	}
	return entry;
}

/* The offset user space passes to mmap() to map @entry. */
u64 sroce_mmap_offset(const struct sroce_mmap_entry *entry)
{
	return rdma_user_mmap_get_offset(&entry->rdma);
}

/* No new mappings of @entry; freed by sroce_mmap_free() when unused. */
void sroce_mmap_remove(struct sroce_mmap_entry *entry)
{
	rdma_user_mmap_entry_remove(&entry->rdma);
}

void sroce_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	struct sroce_mmap_entry *entry =
		container_of(rentry, struct sroce_mmap_entry, rdma);

	vfree(entry->vaddr);
	kfree(entry);
}

int sroce_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rentry;
	struct sroce_mmap_entry *entry;
	int err;

	/* Checks VM_SHARED and that the size is exactly the entry's. */
	rentry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rentry)
		return -EINVAL;
	entry = container_of(rentry, struct sroce_mmap_entry, rdma);

	if (vma->vm_flags & VM_EXEC) {
		err = -EPERM;
		goto out;
	}
	sroce_vm_flags_clear(vma, VM_MAYEXEC);
	err = remap_vmalloc_range(vma, entry->vaddr, 0);
out:
	rdma_user_mmap_entry_put(rentry);
	return err;
}
